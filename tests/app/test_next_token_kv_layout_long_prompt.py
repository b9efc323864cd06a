"""Two layout faults seen at 8,000 tokens on a 1366 px screen: the logit lens left a blank band above its table
(the hidden candidates kept their share of the height), and the KV panel's paging line was cut at the edge."""
from __future__ import annotations

import numpy as np

from explorer.app.panels import KVCachePanel, NextTokenPanel
from tests.app.synthetic_trace import build_trace


def test_the_logit_lens_table_follows_its_button_without_a_blank_band(qtbot, words_session):
    panel = NextTokenPanel(words_session)
    qtbot.addWidget(panel)
    panel.resize(340, 600)
    panel.show()
    words_session.set_trace(build_trace(n_layers=3, prompt_len=8, steps=1))
    ids, probs = np.zeros((3, 4), dtype=np.int64), np.full((3, 4), 0.25)
    panel.show_logit_lens({"position": panel.position, "ids": ids, "probs": probs})
    qtbot.wait(20)
    assert panel.lens_table.isVisible() and not panel.table.isVisible()
    label_bottom = panel.position_label.mapTo(panel, panel.position_label.rect().bottomLeft()).y()
    button_top = panel.lens_button.mapTo(panel, panel.lens_button.rect().topLeft()).y()
    assert button_top - label_bottom < 12                  # the button (and the lens under it) right below the text
    panel.lens_button.click()                              # back to the candidates: they have their room again
    qtbot.wait(20)
    assert panel.table.isVisible() and panel.table.height() > 100


def test_the_paging_line_wraps_in_a_narrow_column(qtbot, words_session):
    panel = KVCachePanel(words_session)
    qtbot.addWidget(panel)
    panel.resize(1000, 500)
    panel.show()
    words_session.set_trace(build_trace(prompt_len=8000 // 16, steps=1, max_positions=1024))
    qtbot.wait(20)
    label = panel.paging_label
    text_width = label.fontMetrics().horizontalAdvance(label.document.toPlainText())
    assert label.width() < text_width                      # the column is narrower than the line...
    assert label.height() >= 2 * label.fontMetrics().height()    # ...so it takes two lines, not a cut one
    assert "empty slots)" in label.document.toPlainText()
