"""The KV lab what-if progress words take the lines their words need: at 1366x768 the label beside the bar had
~130 px and read "39% decodi…" (drive21 m1). Checked with the font's metrics: every line drawn fits the label's
width and the lines together hold the whole sentence."""
from __future__ import annotations

from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QWidget

from explorer.app.widgets.what_if_view import StageBar


def test_the_stage_words_show_whole_on_two_lines_beside_the_bar(qtbot):
    row = QWidget()
    layout = QHBoxLayout(row)
    bar = StageBar()
    bar.setRange(0, 100)
    layout.addWidget(bar, 1)
    layout.addWidget(bar.words, 2)
    qtbot.addWidget(row)
    row.resize(200, 60)                            # the bar and its words' share of the what-if row at 1366x768
    row.show()
    qtbot.waitExposed(row)
    bar.setValue(39)
    bar.setFormat("%p% decoding both models")
    words, metrics = bar.words, QFontMetrics(bar.words.font())
    lines = words.shown().split("\n")
    assert " ".join(lines) == "39% decoding both models", lines
    assert 1 < len(lines) <= 2
    for line in lines:
        assert metrics.horizontalAdvance(line) <= words.contentsRect().width(), (line, words.contentsRect().width())
    assert len(lines) * metrics.lineSpacing() <= words.contentsRect().height()
