"""Activation patching's progress: the bar's growing chunk covers none of the progress words, at any share done,
and the words ("54 of 270 sites") are whole in the room a 1366 px window gives them (issue 22: the chunk hid the
first digit of "54 of 270")."""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QLabel, QStyle, QStyleOptionProgressBar

from explorer.app.panels.experiments import ExperimentsPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.synthetic_trace import WORDS, build_trace

TOTAL = 270


def pixels(widget) -> np.ndarray:
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_ARGB32)
    return np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4).copy()


def chunk_columns(bar) -> range:
    """The bar's columns its chunk fills, as the style draws it."""
    option = QStyleOptionProgressBar()
    bar.initStyleOption(option)
    groove = bar.style().subElementRect(QStyle.SubElement.SE_ProgressBarContents, option, bar)
    share = (bar.value() - bar.minimum()) / (bar.maximum() - bar.minimum())
    return range(groove.left(), groove.left() + int(share * groove.width()))


def test_the_chunk_covers_no_progress_words_and_they_are_whole(qtbot):
    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    panel = make(qtbot, session, ExperimentsPanel)
    panel.resize(1019, 530)                           # the Experiments dock of a 1366x768 window
    session.set_trace(build_trace(prompt_len=6))
    panel.tabs.setCurrentWidget(panel.patching)
    QApplication.processEvents()
    view = panel.patching
    bar = view.progress
    for done in (20, 54, 100, 135, 200, 270):
        words = f"{done} of {TOTAL} sites"
        view._on_progress(done / TOTAL, words)
        QApplication.processEvents()
        chunk = chunk_columns(bar)
        drawn = pixels(bar)[:, chunk.start: chunk.stop]
        view._on_progress(done / TOTAL, "")                 # the same share done, with no words
        QApplication.processEvents()
        bare = pixels(bar)[:, chunk.start: chunk.stop]
        assert np.array_equal(drawn, bare), f"at {words!r} the chunk covers ink of the words"
    for done in (54, 270):
        words = f"{done} of {TOTAL} sites"
        view._on_progress(done / TOTAL, words)
        QApplication.processEvents()
        shown = [label for label in view.findChildren(QLabel) if label.text() == words and label.isVisible()]
        assert shown, f"{words!r} is not shown"
        assert shown[0].fontMetrics().horizontalAdvance(words) <= shown[0].contentsRect().width(), \
            f"{words!r} is cut in {shown[0].contentsRect().width()} px"
