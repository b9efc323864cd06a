"""Embeddings ▸ RoPE angles is titled as the angles it draws, has no empty ‖row‖₂ plot beside it, and
the view chooser shows its choices whole, even in a narrow dock."""
from __future__ import annotations

from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionComboBox

from explorer.app.panels import EmbeddingsPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make
from tests.app.synthetic_trace import build_trace


def title_of(plot) -> str:
    return plot.titleLabel.item.toPlainText()


def test_rope_angles_have_their_own_title_and_no_norm_plot(qtbot):
    session = Session()
    panel = make(qtbot, session, EmbeddingsPanel)
    session.set_trace(build_trace(prompt_len=5, steps=1, d_model=16))
    QApplication.processEvents()
    assert "E[id]" in title_of(panel.heatmap.plot) and panel.norm_plot.isVisible()
    tokens_width = panel.heatmap.plot.sceneBoundingRect().width()
    panel.view_box.setCurrentIndex(panel.view_box.findData("rope"))
    QApplication.processEvents()
    title = title_of(panel.heatmap.plot)
    assert "E[id]" not in title and "θ" in title
    assert not panel.norm_plot.isVisible()
    assert panel.heatmap.plot.sceneBoundingRect().width() > tokens_width + 100     # the map takes the room
    panel.view_box.setCurrentIndex(panel.view_box.findData("tokens"))
    QApplication.processEvents()
    assert "E[id]" in title_of(panel.heatmap.plot) and panel.norm_plot.isVisible()


def test_the_view_chooser_shows_its_longest_choice_whole_in_a_narrow_panel(qtbot):
    session = Session()
    panel = make(qtbot, session, EmbeddingsPanel)
    session.set_trace(build_trace(prompt_len=5, steps=1, d_model=16))
    panel.resize(260, 400)
    QApplication.processEvents()
    box = panel.view_box
    option = QStyleOptionComboBox()
    box.initStyleOption(option)
    text_room = box.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                           QStyle.SubControl.SC_ComboBoxEditField, box).width()
    longest = max(box.fontMetrics().horizontalAdvance(box.itemText(i)) for i in range(box.count()))
    assert box.count() >= 2 and text_room >= longest
