"""The prompt editor: plain text, re-tokenized live once the person pauses typing."""
from __future__ import annotations

import re

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QFont, QTextOption
from PySide6.QtWidgets import QPlainTextEdit, QWidget

DEBOUNCE_MS = 150
# Qt lays out a run of text with nowhere to wrap in time that grows with its square: a session whose prompt was one
# line of 1,000,000 characters with no space froze the window 55 s (3,000,000: over 9 minutes; boundary27). A text
# holding a run this long is wrapped anywhere instead, in linear time (0.4 s for 1,000,000 characters).
UNBROKEN_CHARS = 10_000
_UNBROKEN = re.compile(r"\S{%d}" % UNBROKEN_CHARS)
DEFAULT_WRAP = QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere          # QPlainTextEdit's own
PLACEHOLDERS = {
    "prompt": "Type a prompt, then press Run (Ctrl+Enter) or Step (Space, outside the editor)…",
    "source": "Type the source text to translate (e.g. twelve thousand three hundred, or March 5, 2024), "
              "then press Step (Space, outside the editor) to produce the target token by token…",
}
TOOLTIPS = {"prompt": "", "source": "The encoder reads this source text once; Step adds one target token. "
                                     "A task token (<2zh> or <2en>) is added from the text's script."}


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
        self.setPlaceholderText(PLACEHOLDERS["prompt"])
        font = QFont("DejaVu Sans Mono")
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.setFont(font)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.settle)
        self.textChanged.connect(self._debounce.start)

    def set_role(self, role: str) -> None:
        """"prompt" (a decoder continues it) or "source" (an encoder-decoder translates it)."""
        self.setPlaceholderText(PLACEHOLDERS[role])
        self.setToolTip(TOOLTIPS[role])

    @property
    def text(self) -> str:
        return self.toPlainText()

    def set_text(self, text: str) -> None:
        """Replace the text (e.g. from a session) and tokenize it at once."""
        if text != self.toPlainText():
            self._wrap_for(text)
            self.setPlainText(text)
        self.settle()

    def insertFromMimeData(self, source) -> None:
        """A paste: wrapped anywhere first where it holds a run of UNBROKEN_CHARS with no space."""
        if source.hasText() and _UNBROKEN.search(source.text()):
            self._wrap_for(source.text())
        super().insertFromMimeData(source)

    def _wrap_for(self, text: str) -> None:
        """Wrap as Qt does (at word boundaries, where a word is wider than the line anywhere), or only anywhere where
        `text` holds a run of UNBROKEN_CHARS with no space."""
        mode = QTextOption.WrapMode.WrapAnywhere if _UNBROKEN.search(text) else DEFAULT_WRAP
        if self.wordWrapMode() != mode:
            self.setWordWrapMode(mode)

    def settle(self) -> None:
        """Emit the current text now, without waiting for the debounce."""
        self._debounce.stop()
        text = self.toPlainText()
        if self.wordWrapMode() == QTextOption.WrapMode.WrapAnywhere:
            self._wrap_for(text)                 # the long run edited away: words wrap whole again
        self.prompt_settled.emit(text)
