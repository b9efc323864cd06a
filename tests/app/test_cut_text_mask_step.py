"""The Mask panel's step counter is never cut mid-word at a dock's edge (issue 22, seen at 1366x768): where it is
wider than its room it is drawn elided with "…", exactly as Qt elides it, and is whole in the tooltip."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QLabel

from explorer.app.panels.mask import MaskPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.synthetic_trace import WORDS, build_trace


def pixels(widget) -> np.ndarray:
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_ARGB32)
    return np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine()).copy()


def drawn_as(label, text: str) -> np.ndarray:
    """What a plain QLabel of the label's size, font, palette and alignment draws for `text`."""
    reference = QLabel(text)
    reference.setFont(label.font())
    reference.setPalette(label.palette())
    reference.setAlignment(label.alignment())
    reference.setContentsMargins(label.contentsMargins())
    reference.resize(label.size())
    return pixels(reference)


def test_the_step_counter_is_elided_with_an_ellipsis_and_whole_in_its_tooltip(qtbot):
    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    panel = make(qtbot, session, MaskPanel)
    panel.resize(430, 560)                       # the Mask dock beside Learn at 1366 px
    session.set_trace(build_trace(prompt_len=12))
    qtbot.waitUntil(lambda: "rows" in panel.step_label.text(), timeout=5000)
    QApplication.processEvents()
    label = panel.step_label
    whole = label.text()
    metrics, room = label.fontMetrics(), label.contentsRect().width()
    assert metrics.horizontalAdvance(whole) > room, "the counter fits at this width: nothing to test"
    elided = metrics.elidedText(whole, Qt.TextElideMode.ElideRight, room)
    assert elided.endswith("…") and metrics.horizontalAdvance(elided) <= room
    assert np.array_equal(pixels(label), drawn_as(label, elided)), f"{whole!r} is not drawn as {elided!r}"
    assert label.toolTip() == whole
    label.resize(metrics.horizontalAdvance(whole) + 20, label.height())      # room again: whole, no tooltip
    assert np.array_equal(pixels(label), drawn_as(label, whole)) and label.toolTip() == ""
