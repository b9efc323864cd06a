"""Tokens ▸ Export … as shown on screen holds the coloured text whole (drive21 m9): at 128 tokens the table was
drawn whole (whole_tables) but the text above it was grabbed as its on-screen 4-line box with its scroll bar.

Expectation, from the text box's own document (QTextDocument laid out at the box's width without a scroll bar)
and the picture alone: while the picture is taken the box has no scroll bar and its viewport holds the whole
document; the written PNG is at least as tall as the panel on screen plus what the box hid (the document's
height over the box's viewport); the panel on screen is as it was before.
"""
from __future__ import annotations

from PySide6.QtGui import QImage, QTextDocument

from explorer.app.panels.tokens import TokensPanel
from explorer.app.state.session import Session
from explorer.drawing import export
from tests.app.shared_window import make
from tests.app.test_token_text import bundled

TEXT = "It was a dark and stormy night; the rain fell in torrents, except at occasional intervals. " * 8


def document_height(box, width: int) -> float:
    """The box's text laid out anew at `width` px (its viewport without a scroll bar)."""
    document = QTextDocument()
    document.setDefaultFont(box.document().defaultFont())
    document.setDefaultStyleSheet(box.document().defaultStyleSheet())
    document.setDocumentMargin(box.document().documentMargin())
    document.setHtml(box.toHtml())
    document.setTextWidth(width)
    return document.size().height()


def test_the_tokens_picture_holds_the_whole_text_and_no_scroll_bar(qtbot, tmp_path):
    session = Session()
    panel = make(qtbot, session, TokensPanel)
    panel.resize(340, 560)
    tokens = bundled("translate-en-zh").encode(TEXT)
    session.set_tokens(tokens)
    qtbot.wait(100)
    box = panel.text_view
    assert box.verticalScrollBar().maximum() > 0, "the text fits its box: nothing to show"
    before, scrolled = panel.size(), box.verticalScrollBar().value()
    seen = {}
    grab = panel.grab

    def grabbing(*args):
        seen.update(bar=box.verticalScrollBar().isVisible(), viewport=box.viewport().height(),
                    whole=document_height(box, box.viewport().width()), panel=panel.height())
        return grab(*args)

    panel.grab = grabbing
    path = export.save_widget(panel, tmp_path / "tokens.png")
    assert not seen["bar"], "the text box's scroll bar is in the picture"
    assert seen["viewport"] >= seen["whole"] - 1, f"the box shows {seen['viewport']} px of {seen['whole']:.0f} px"
    hidden = document_height(box, box.viewport().width()) - box.viewport().height()
    picture = QImage(str(path))
    assert picture.height() >= before.height() + hidden - 1, \
        f"the picture is {picture.height()} px, the panel {before.height()} px and its text hid {hidden:.0f} px"
    assert panel.size() == before and box.verticalScrollBar().value() == scrolled       # on screen as it was
    assert box.verticalScrollBar().isVisible()
