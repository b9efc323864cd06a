"""Model map under a larger application font (View ▸ Presentation grows it 1.4 times): the boxes are laid out
again for the larger text, so every label still fits in its box, and the labels and the edges' shapes grow
with the font instead of keeping their first size (unreadable from the back of a classroom).

Expectation: the text's own measured height against its box, and the ratio of sizes against the font's.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication, QGraphicsTextItem

from explorer.app.panels.model_map import ACCENT, ModelMapPanel
from explorer.app.state.session import Session
from explorer.app.window.presentation import FONT_SCALE, scaled
from tests.app.shared_window import make
from tests.app.test_model_map import bundled


def sizes(panel):
    boxes = list(panel.items.values())
    labels = [i for i in panel.scene.items() if isinstance(i, QGraphicsTextItem) and i.parentItem() is None]
    return boxes, labels


def test_a_larger_font_lays_the_map_out_again_with_larger_text_that_fits(qtbot):
    app = QApplication.instance()
    session = Session()
    panel = make(qtbot, session, ModelMapPanel)
    session.set_model(bundled("shakespeare-gqa")[1])
    boxes, labels = sizes(panel)
    text_before = boxes[0].text.boundingRect().height()
    label_before = max(label.boundingRect().height() for label in labels)
    before = app.font()
    try:
        app.setFont(scaled(before, FONT_SCALE))
        QApplication.sendPostedEvents(None, QEvent.Type.ApplicationFontChange)
        app.processEvents()
        boxes, labels = sizes(panel)
        grown = boxes[0].text.boundingRect().height() / text_before
        assert grown > 1 + (FONT_SCALE - 1) / 2, f"node text grew {grown:.2f} times with a {FONT_SCALE} times font"
        assert max(label.boundingRect().height() for label in labels) / label_before > 1 + (FONT_SCALE - 1) / 2
        for box in boxes:
            assert box.text.boundingRect().height() <= box.rect().height() + 0.5, box.node.label
        lit = [box.node.key for box in boxes if box.pen().color() == ACCENT]
        assert lit and all(session.selection.layer in panel.items[key].node.layers for key in lit), \
            "the selected block is no longer outlined after the new layout"
    finally:
        app.setFont(before)
