"""The one door errors reach the user through: one line, elided, with Details… for the whole text.

A failed job or a refused file can say a great deal (a traceback, an error repeated for every
weight). Placed in a label as it is, such a text made the label, its dock and then the window ask
for thousands of pixels of height. Here the text is only ever drawn as its first line, elided to the
width the layout gives: the line asks for one line of height and no width of its own, whatever the
message. The full text opens on demand in a dialog whose size is bounded by the screen and which
scrolls (Qt Creator's info bar, Netron's error dialog).
"""
from __future__ import annotations

import re

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QGuiApplication, QPainter
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QPlainTextEdit,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

SUMMARY_CHARS = 400          # the most of a first line a summary (a dialog's sentence) carries
DETAILS_SHARE = 0.6          # the Details dialog takes at most this share of the screen each way
LEADING_PATH = re.compile(r"^(\S*/\S*?)(?=:?\s)")    # a sentence that names its file first: "/a/b.json is not …"


def summary(message: str) -> str:
    """The message's first non-empty line, cut to SUMMARY_CHARS: what may stand in a one-line place."""
    first = next((line.strip() for line in str(message).splitlines() if line.strip()), "")
    return first if len(first) <= SUMMARY_CHARS else first[:SUMMARY_CHARS - 1] + "…"


class ElidedLine(QWidget):
    """One line of text drawn elided to the widget's width; it asks for one line of height and no width."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        self._text = summary(text)
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(min(self.fontMetrics().horizontalAdvance(self._text), 400), self.fontMetrics().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.fontMetrics().height())

    def shown(self) -> str:
        """The text as drawn at the widget's width. A file named first gives way in its middle before the reason
        after it is cut (drive29: "/tmp/…/brokencfg/config.json is not v…" at 1366 px hid what was wrong)."""
        metrics, width, text = self.fontMetrics(), self.width(), self._text
        lead = LEADING_PATH.match(text)
        if lead and metrics.horizontalAdvance(text) > width:
            rest = text[lead.end(1):]
            room = max(width - metrics.horizontalAdvance(rest), width // 3)
            text = metrics.elidedText(lead[1], Qt.TextElideMode.ElideMiddle, room) + rest
        return metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.rect(), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), self.shown())


class ErrorLine(QWidget):
    """An error's first line (elided), a Details… button and a close button; hidden while there is none.

    `show_error(message)` replaces the error shown; `clear()` hides it. The whole message is kept in
    `message` and shown only by `details()`.
    """

    changed = Signal(str)                    # the message now shown ("" when cleared)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("error_line")
        self.message = ""
        self.dialog: QDialog | None = None
        self.line = ElidedLine(self)
        self.line.setObjectName("error_text")
        self.details_button = QToolButton(self)
        self.details_button.setText("Details…")
        self.details_button.setToolTip("show the whole message, to read or copy")
        self.details_button.clicked.connect(self.details)
        self.close_button = QToolButton(self)
        self.close_button.setText("×")
        self.close_button.setToolTip("dismiss this message")
        self.close_button.setAutoRaise(True)
        self.close_button.clicked.connect(self.clear)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.addWidget(self.line, 1)
        layout.addWidget(self.details_button)
        layout.addWidget(self.close_button)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        palette = self.line.palette()
        palette.setColor(self.line.foregroundRole(), Qt.GlobalColor.red)
        self.line.setPalette(palette)
        self.hide()

    def show_error(self, message: str) -> None:
        self.message = str(message)
        self.line.setText(self.message)
        self.setVisible(bool(self.message))
        self.changed.emit(self.message)

    def clear(self) -> None:
        self.show_error("")
        if self.dialog is not None:
            self.dialog.close()

    def details(self) -> QDialog:
        """A modeless dialog with the whole message, read-only and scrollable, sized within the screen."""
        if self.dialog is None:
            self.dialog = details_dialog(self.window())
        self.dialog.findChild(QPlainTextEdit).setPlainText(self.message)
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog


def details_dialog(parent: QWidget) -> QDialog:
    dialog = QDialog(parent)
    dialog.setWindowTitle("Error details")
    text = QPlainTextEdit(dialog)
    text.setReadOnly(True)
    text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, dialog)
    buttons.rejected.connect(dialog.close)
    copy = buttons.addButton("Copy", QDialogButtonBox.ButtonRole.ActionRole)
    copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(text.toPlainText()))
    layout = QVBoxLayout(dialog)
    layout.addWidget(text, 1)
    layout.addWidget(buttons)
    screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
    available = screen.availableGeometry()
    dialog.resize(min(720, int(DETAILS_SHARE * available.width())), min(480, int(DETAILS_SHARE * available.height())))
    return dialog
