"""The translator's warning of the characters its tokenizer leaves out is read whole at 1366x768: in the 341 px
Tokens column it was one elided line ("⚠ Left out by the tokeni…"), neither the characters nor "the model does
not read them" in sight."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.test_token_text import bundled, not_read

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

SCREEN = QSize(1366, 768)


def red_ink_rows(widget) -> list[int]:
    """The pixel rows of `widget`, as drawn, that hold red ink (the warning's text)."""
    image = widget.grab().toImage()
    ratio = image.devicePixelRatio()
    rows = set()
    for y in range(image.height()):
        for x in range(image.width()):
            colour = image.pixelColor(x, y)
            if colour.red() - colour.green() > 60 and colour.red() - colour.blue() > 60:
                rows.add(int(y / ratio))
                break
    return sorted(rows)


def test_the_whole_left_out_warning_is_in_sight_at_1366_wide(qtbot, tmp_path, monkeypatch):
    text = "The quick brown fox"
    tokenizer = bundled("translate-en-zh")
    left_out = not_read(text, tokenizer.decode(tokenizer.encode(text).ids))
    assert left_out
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREEN) as journey:
        journey.open(BUNDLED / "translate-en-zh", text)
        panel = journey.raise_panel("tokens")
        warning = panel.dropped
        qtbot.waitUntil(warning.isVisible, timeout=5000)
        sentence = warning.text()
        assert all(f" {ch}" in sentence for ch in left_out) and "the model does not read them" in sentence
        assert warning.toolTip() == sentence
        window = journey.window
        assert window.width() <= SCREEN.width() and window.height() <= SCREEN.height()
        # The least height the sentence needs wrapped at the widget's whole width, in the widget's font.
        needed = QFontMetrics(warning.font()).boundingRect(
            QRect(0, 0, warning.width(), 10_000), int(Qt.TextFlag.TextWordWrap), sentence).height()
        assert warning.height() >= needed, f"{warning.width()}x{warning.height()} px for a sentence needing {needed}"
        in_window = QRect(warning.mapTo(window, warning.rect().topLeft()), warning.size())
        assert window.rect().contains(in_window), f"the warning at {in_window} is not wholly in the window"
        dock = window.docks["tokens"]
        assert QRect(dock.mapTo(window, dock.rect().topLeft()), dock.size()).contains(in_window)
        ink = red_ink_rows(warning)
        line = QFontMetrics(warning.font()).height()
        assert ink and ink[-1] - ink[0] > line, "the warning is drawn on one line, where it does not fit"
