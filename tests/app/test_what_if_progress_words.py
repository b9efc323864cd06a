"""The KV lab what-if progress words take one line beside the bar, cut after their last whole word with "…" where
the line is too short (the whole in the tooltip): at 1366x768 the label beside the bar had ~130 px and read
"39% decodi…" (drive21 m1); on two lines beside the controls, "21%" over "replicating…" (issue 22). Checked with the
font's metrics: the line drawn fits the label's width and holds the sentence's first words, whole."""
from __future__ import annotations

from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QWidget

from explorer.app.widgets.what_if_view import StageBar


def test_the_stage_words_show_whole_words_on_one_line_beside_the_bar(qtbot):
    row = QWidget()
    layout = QHBoxLayout(row)
    bar = StageBar()
    bar.setRange(0, 100)
    layout.addWidget(bar, 1)
    layout.addWidget(bar.words, 2)
    qtbot.addWidget(row)
    row.resize(200, 60)                            # a row too short for the sentence
    row.show()
    qtbot.waitExposed(row)
    bar.setValue(39)
    bar.setFormat("%p% decoding both models")
    words, metrics = bar.words, QFontMetrics(bar.words.font())
    whole, shown = "39% decoding both models", words.shown()
    assert metrics.horizontalAdvance(whole) > words.contentsRect().width(), "the sentence fits: nothing to check"
    kept = shown.removesuffix("…").split()
    assert "\n" not in shown and shown.endswith("…") and kept and kept == whole.split()[:len(kept)], shown
    assert metrics.horizontalAdvance(shown) <= words.contentsRect().width(), (shown, words.contentsRect().width())
    assert words.toolTip() == whole
    assert metrics.lineSpacing() <= words.contentsRect().height() < 2 * metrics.lineSpacing()
    row.resize(600, 60)
    qtbot.waitUntil(lambda: words.shown() == whole)
    assert words.toolTip() == ""
