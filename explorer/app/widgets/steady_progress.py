"""A progress dialog that keeps one size, whatever its label says.

QProgressDialog grows to its label's width at each new text: loading Gemma, "dequantizing token_embd.weight"
then "dequantizing blk.13.ffn_norm.weight 76%" moved the dialog's right edge, and its Cancel with it, about 90 px
while a person aimed at it (drive 15: the click landed on blank dialog and the model loaded). Its width is fixed
here, and its label has room for LABEL_LINES lines: a text is wrapped there at its spaces, and one longer still
is cut after its last whole word that fits, with "…" (the whole text in the tooltip). Cut in the middle, "Replaying
the prompt's 23 tok…ding 2 tokens: layer 14 of 30" lost the words that say what is being done (drive20 m8).
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QProgressDialog, QWidget

WIDTH_PX = 420              # room for "dequantizing blk.17.ffn_gate.weight" and a step's "layer 30 of 30"
LABEL_MARGIN_PX = 40        # the dialog's margins around its label
LABEL_LINES = 2             # a replay's "…, then decoding 2 tokens: layer 14 of 30" whole at WIDTH_PX
ELLIPSIS = "…"


class SteadyProgress(QProgressDialog):
    def __init__(self, text: str, maximum: int, parent: QWidget | None, title: str) -> None:
        super().__init__("", "Cancel", 0, maximum, parent)
        self.setWindowTitle(title)
        self.setFixedWidth(WIDTH_PX)
        label = QLabel(self)
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        # as tall as LABEL_LINES lines whatever the text: the bar and Cancel keep their place as it changes
        label.setFixedHeight(LABEL_LINES * label.fontMetrics().lineSpacing())
        self.setLabel(label)
        self._label = label
        self.setAutoClose(False)
        self.setAutoReset(False)
        self.setLabelText(text)

    def setLabelText(self, text: str) -> None:                   # noqa: N802 (Qt's name)
        room = WIDTH_PX - LABEL_MARGIN_PX
        super().setLabelText("\n".join(word_lines(text, self._label.fontMetrics(), room, LABEL_LINES)))
        self.setToolTip(text)


def word_lines(text: str, metrics: QFontMetrics, width: int, most: int) -> list[str]:
    """`text` in at most `most` lines of at most `width` px, broken at spaces; where it needs more, the last line
    ends after its last whole word that fits with "…" (a single word wider than a line is cut at the right)."""
    words, lines = text.split(), []
    while words and len(lines) < most:
        line = words.pop(0)
        while words and metrics.horizontalAdvance(f"{line} {words[0]}") <= width:
            line = f"{line} {words.pop(0)}"
        lines.append(line)
    if words or (lines and metrics.horizontalAdvance(lines[-1]) > width):
        lines[-1] = _ended(lines[-1], metrics, width)
    return [metrics.elidedText(line, Qt.TextElideMode.ElideRight, width) for line in lines]


def _ended(line: str, metrics: QFontMetrics, width: int) -> str:
    """`line` with "…" after the most of its whole words that fit `width` with it."""
    words = line.split()
    while len(words) > 1 and metrics.horizontalAdvance(" ".join(words) + ELLIPSIS) > width:
        words.pop()
    return " ".join(words) + ELLIPSIS
