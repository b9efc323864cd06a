"""Text widgets every panel shares: a one-line readout that never widens its dock, and changing rich text
wrapped to the panel's width that lays itself out again only when its number of lines changes."""
from __future__ import annotations

import html
import math

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QAbstractTextDocumentLayout, QFont, QPainter, QPalette, QTextCursor, QTextDocument
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QWidget


class LineLabel(QLabel):
    """One line of changing text (a hover readout, a step counter) that never widens its panel: a plain
    QLabel asks for its text's width, so a longer text made the main window resize the docks beside
    it during decoding, every view in them laid out and drawn again. Where the text is wider than the
    label it is elided with "…" (`shown`), and shown whole as the tooltip: cut at the edge, the Mask
    panel's step read "step 0 (prefill) of 0 (+12 rov" at 1366 px."""

    ELIDE = Qt.TextElideMode.ElideRight

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:
        super().setText(text)
        self._tip_if_cut()

    def shown(self) -> str:
        """The text drawn: whole where it fits, else elided with "…" at a character's boundary."""
        return self.fontMetrics().elidedText(self.text(), self.ELIDE, self.contentsRect().width())

    def _rich(self) -> bool:
        form = self.textFormat()
        return form == Qt.TextFormat.RichText or (form == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(self.text()))

    def _tip_if_cut(self) -> None:
        text = self.text()
        cut = self.fontMetrics().horizontalAdvance(text) > self.contentsRect().width()
        self.setToolTip(text if cut else "")

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._tip_if_cut()                      # the text that fitted may not any longer, and the other way round

    def paintEvent(self, event) -> None:
        if self._rich():                        # (rich text is laid out by QLabel, and cut at its edge)
            super().paintEvent(event)
            return
        painter = QPainter(self)
        self.style().drawItemText(painter, self.contentsRect(), int(self.alignment()), self.palette(),
                                  self.isEnabled(), self.shown(), self.foregroundRole())
        painter.end()


QUIET_GROUND = "palette(alternate-base)"          # a note's ground: nothing to show yet, working, drawing
WARNING_GROUND = "rgba(230, 160, 0, 60)"          # out of date


def note_style(ground: str = QUIET_GROUND) -> str:
    """The style sheet of a note in words standing in a view's place (a panel's, the patching map's)."""
    return f"QLabel {{ padding: 6px; border-radius: 3px; background: {ground}; }}"

class WrappedText(QWidget):
    """Changing text (a panel's formula with its live shapes, the next-token caption) wrapped to
    the panel's width, `setText` taking rich text.

    A QLabel asks its layout to lay out again on every new text, and these change with every
    decoding step: the layout pass of every visible panel cost several milliseconds a step,
    and a longer caption widened its dock, making the main window lay out the docks beside it.
    This asks for nothing wider than the panel and lays itself out again only when its number
    of lines changes.
    """

    PADDING = (4, 2)          # horizontal, vertical
    SQUEEZED_PX = 320         # narrower than this, the text asks no more height than it needs at this width
    SCALE = 1.1               # the formula a little larger than the text around it (13 px beside 12)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = QTextDocument(self)
        self.document.setDocumentMargin(0)
        self.document.setDefaultFont(self._text_font())
        self._html = ""
        self._elided: tuple | None = None       # ((html, width, height), the text cut to fit them, ending in …)
        self._height = self._height_for(self.width())
        policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def text(self) -> str:
        return self._html

    def _text_font(self) -> QFont:
        """The widget's font, SCALE times larger. Taken from the widget's font, not a fixed pixel size, so
        that it grows with the application's (View ▸ Presentation): a fixed 13 px stayed small on a projector."""
        font = QFont(self.font())
        if font.pointSizeF() > 0:
            font.setPointSizeF(font.pointSizeF() * self.SCALE)
        else:
            font.setPixelSize(round(font.pixelSize() * self.SCALE))
        return font

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self.document.setDefaultFont(self._text_font())
            self.document.setHtml(self._html)             # the HTML's runs took the old default font's size
            self.document.setTextWidth(-1)                # wrapped again at the new size
            self._fit(self.width())
            self.update()

    def set_plain(self, text: str) -> None:
        self.setText(html.escape(text, quote=False))

    def setText(self, html_text: str) -> None:
        self._html = html_text
        self.document.setHtml(html_text)
        self._fit(self.width())
        self.update()

    def _fit(self, width: int) -> None:
        """Ask the layout for a new height only when the text at `width` needs one."""
        height = self._height_for(width)
        if height != self._height:
            self._height = height
            self.updateGeometry()

    def _wrap_at(self, width: int) -> None:
        """Wrap the text for a widget `width` wide (setTextWidth lays it out again even for its own width)."""
        width = max(1, width - 2 * self.PADDING[0])
        if self.document.textWidth() != width:
            self.document.setTextWidth(width)

    def _height_for(self, width: int) -> int:
        """The height the text needs wrapped at `width`, but never more than at SQUEEZED_PX: a column squeezed
        narrower (a window shrunk to 800 px) shows the text's first lines and the rest in the tooltip, rather
        than a window taller than the screen (the Tokens column's 174 px asked 412 px of text height)."""
        full = height = self._wrapped_height(width)
        if width < self.SQUEEZED_PX:
            height = min(full, self._wrapped_height(self.SQUEEZED_PX))
            self._wrap_at(width)
        self._clipped(height < full)
        return height

    def _wrapped_height(self, width: int) -> int:
        self._wrap_at(width)
        return int(math.ceil(self.document.size().height())) + 2 * self.PADDING[1]

    def _clipped(self, clipped: bool) -> None:
        """The whole text in the tooltip while its last lines are cut (a widget's own tooltip is left alone)."""
        tip = self.document.toPlainText() if clipped else ""
        if self.toolTip() in ("", getattr(self, "_clip_tip", "")):
            self.setToolTip(tip)
        self._clip_tip = tip

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._height_for(width)

    def sizeHint(self) -> QSize:
        return QSize(200, self._height)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self._height)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit(event.size().width())

    def paintEvent(self, event) -> None:
        self._wrap_at(self.width())                     # the layout may have asked about other widths
        painter = QPainter(self)
        painter.translate(*self.PADDING)
        context = QAbstractTextDocumentLayout.PaintContext()
        palette = QPalette(context.palette)
        palette.setColor(QPalette.ColorRole.Text, self.palette().color(QPalette.ColorRole.WindowText))
        context.palette = palette
        self.shown_document().documentLayout().draw(painter, context)
        painter.end()

    def shown_document(self) -> QTextDocument:
        """What is drawn: the text, or where the widget is shorter than it, the text cut after its last whole line
        and ending in "…", so that a person sees there is more (in the tooltip). Cut mid-line by the widget's edge,
        the formula of Next token read "p = softmax(h₁₅ W_U) ∈ ℝ⁴⁰⁹⁶," as if it ended there."""
        room = self.height() - 2 * self.PADDING[1]
        if math.ceil(self.document.size().height()) <= room:
            return self.document
        key = (self._html, self.document.textWidth(), room)
        if self._elided is None or self._elided[0] != key:
            self._elided = (key, self._cut_to(room))
        return self._elided[1]

    def _cut_to(self, room: int) -> QTextDocument:
        """The longest start of the text that, with "…" after it, fits `room` px at the text's width."""
        def cut(length: int) -> QTextDocument:
            document = self.document.clone()
            document.setDocumentMargin(self.document.documentMargin())     # a clone has the default margin, 4 px
            cursor = QTextCursor(document)
            cursor.setPosition(length)
            cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText("…")
            return document
        low, high = 0, self.document.characterCount() - 1       # fits with `low` characters; not with `high`
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if math.ceil(cut(middle).size().height()) <= room else (low, middle)
        return cut(low)


class Caption(WrappedText):
    """A caption wrapped whole at every width, in its own scroll area (`scrolled`). WrappedText caps its height in a
    column narrower than SQUEEZED_PX, lest the text make the window taller, and that cap cut captions mid-sentence
    in 280 px columns (activation patching's, Why this token's on the MLA model at 1920 x 1080); in a scroll area
    it asks the window for nothing, so it needs no cap."""

    SQUEEZED_PX = 0

    def scrolled(self) -> QScrollArea:
        """The caption in a frameless scroll area on its panel's background: whole where there is room."""
        return frameless_scroll(self)


def frameless_scroll(widget: QWidget) -> QScrollArea:
    """`widget` in a frameless scroll area on its panel's background, scrolled up and down only: whole where
    there is room, and asking the window for no more than a scroll bar's height where there is not."""
    scroll = QScrollArea()
    scroll.setWidget(widget)
    scroll.setWidgetResizable(True)
    scroll.viewport().setAutoFillBackground(False)        # the panel's own background, as beside it
    widget.setAutoFillBackground(False)                    # (setWidget turned it on)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return scroll
