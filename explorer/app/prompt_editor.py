"""The prompt editor: plain text, re-tokenized live once the person pauses typing."""
from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QPlainTextEdit, QWidget

DEBOUNCE_MS = 150


class PromptEditor(QPlainTextEdit):
    """Emits `prompt_settled(text)` when the text stopped changing for DEBOUNCE_MS.

    Space and Backspace type here while the editor has focus; elsewhere in the
    window they step forward and back (Qt gives the focused text editor first
    claim on them).
    """

    prompt_settled = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("prompt")
        self.setPlaceholderText("Type a prompt, then press Run (Ctrl+Enter) or Step (Space, outside the editor)…")
        font = QFont("DejaVu Sans Mono")
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.setFont(font)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.settle)
        self.textChanged.connect(self._debounce.start)

    @property
    def text(self) -> str:
        return self.toPlainText()

    def set_text(self, text: str) -> None:
        """Replace the text (e.g. from a session) and tokenize it at once."""
        if text != self.toPlainText():
            self.setPlainText(text)
        self.settle()

    def settle(self) -> None:
        """Emit the current text now, without waiting for the debounce."""
        self._debounce.stop()
        self.prompt_settled.emit(self.toPlainText())
