"""A progress dialog that keeps one width, whatever its label says.

QProgressDialog grows to its label's width at each new text: loading Gemma, "dequantizing token_embd.weight"
then "dequantizing blk.13.ffn_norm.weight 76%" moved the dialog's right edge, and its Cancel with it, about 90 px
while a person aimed at it (drive 15: the click landed on blank dialog and the model loaded). Its width is fixed
here, and a label longer than the room is elided in the middle, its ends (what is done, how far) kept.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QProgressDialog, QWidget

WIDTH_PX = 420              # room for "dequantizing blk.17.ffn_gate.weight" and a step's "layer 30 of 30"
LABEL_MARGIN_PX = 40        # the dialog's margins around its label


class SteadyProgress(QProgressDialog):
    def __init__(self, text: str, maximum: int, parent: QWidget | None, title: str) -> None:
        super().__init__("", "Cancel", 0, maximum, parent)
        self.setWindowTitle(title)
        self.setFixedWidth(WIDTH_PX)
        self.setAutoClose(False)
        self.setAutoReset(False)
        self.setLabelText(text)

    def setLabelText(self, text: str) -> None:                   # noqa: N802 (Qt's name)
        room = WIDTH_PX - LABEL_MARGIN_PX
        super().setLabelText(self.fontMetrics().elidedText(text, Qt.TextElideMode.ElideMiddle, room))
        self.setToolTip(text)
