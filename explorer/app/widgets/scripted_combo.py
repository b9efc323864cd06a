"""A combo box whose items are rich text, drawn with real sub- and superscripts (W^Q as W with a raised Q).

Unicode has no raised Q, so a plain item can only read 'W^Q'. Each item keeps its plain text (what Qt's
keyboard search and accessibility read) and its HTML under HTML_ROLE; a delegate draws the HTML in the list
and the closed box draws the current item's HTML in its edit field, as the panels' formulas draw it.
"""
from __future__ import annotations

import math

from PySide6.QtCore import QModelIndex, QSize, Qt
from PySide6.QtGui import QAbstractTextDocumentLayout, QFont, QPalette, QTextDocument
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionComboBox,
    QStyleOptionViewItem,
    QStylePainter,
    QWidget,
)

HTML_ROLE = Qt.ItemDataRole.UserRole + 1


def text_document(html: str, font: QFont) -> QTextDocument:
    """`html` laid out on one line in `font`, with no margin: what an item draws."""
    document = QTextDocument()
    document.setDocumentMargin(0)
    document.setDefaultFont(font)
    document.setHtml(html)
    return document


def _draw(painter, document: QTextDocument, rect, colour) -> None:
    """`document` drawn in `colour`, vertically centred in `rect` and clipped to it."""
    context = QAbstractTextDocumentLayout.PaintContext()
    context.palette.setColor(QPalette.ColorRole.Text, colour)
    painter.save()
    painter.setClipRect(rect)
    painter.translate(rect.left(), rect.top() + (rect.height() - document.size().height()) / 2)
    document.documentLayout().draw(painter, context)
    painter.restore()


class ScriptedItemDelegate(QStyledItemDelegate):
    """Draws an item's HTML_ROLE (else its escaped text) as rich text, in the list's colours."""

    def document(self, index: QModelIndex, font: QFont) -> QTextDocument:
        html = index.data(HTML_ROLE)
        if html is None:
            document = text_document("", font)
            document.setPlainText(str(index.data(Qt.ItemDataRole.DisplayRole) or ""))
            return document
        return text_document(html, font)

    def paint(self, painter, option, index) -> None:
        item = QStyleOptionViewItem(option)
        self.initStyleOption(item, index)
        item.text = ""                                   # the background, focus and selection, not the text
        style = item.widget.style() if item.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, item, painter, item.widget)
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, item, item.widget)
        selected = bool(item.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        _draw(painter, self.document(index, item.font), rect, item.palette.color(role))

    def sizeHint(self, option, index) -> QSize:
        hint = super().sizeHint(option, index)
        size = self.document(index, option.font).size()
        margin = 2 * (QApplication.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin) + 1)
        return QSize(max(hint.width(), math.ceil(size.width()) + margin),
                     max(hint.height(), math.ceil(size.height()) + 4))      # room for a raised or lowered script


class ScriptedComboBox(QComboBox):
    """A QComboBox of rich-text items: `add_item(plain, html)`; the list and the closed box draw the HTML."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setItemDelegate(ScriptedItemDelegate(self))

    def add_item(self, plain: str, html: str) -> None:
        self.addItem(plain)
        self.setItemData(self.count() - 1, html, HTML_ROLE)

    def paintEvent(self, event) -> None:
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        html = self.currentData(HTML_ROLE)
        if html is not None:
            option.currentText = ""                      # the frame and arrow; the text is drawn as rich text
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)
        if html is None:
            return
        rect = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                           QStyle.SubControl.SC_ComboBoxEditField, self).adjusted(2, 0, -2, 0)
        _draw(painter, text_document(html, self.font()), rect, self.palette().color(QPalette.ColorRole.ButtonText))
