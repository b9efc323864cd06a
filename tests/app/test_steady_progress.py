"""The Loading dialog keeps its width, and so its Cancel its place, whatever its label says (drive 15: loading
Gemma, the dialog grew from 225 to 312 px as the tensor names lengthened, Cancel moved ~90 px and a click aimed at
it landed on blank dialog). Expectation: the Cancel button's screen rectangle, before and after longer labels;
a label too long for the dialog's two lines is cut at its end and is whole in the tooltip."""
from __future__ import annotations

from PySide6.QtWidgets import QLabel, QPushButton

from explorer.app.widgets.steady_progress import SteadyProgress


def test_cancel_stays_put_as_the_label_lengthens(qtbot):
    dialog = SteadyProgress("Loading the model…", 100, None, "Loading")
    qtbot.addWidget(dialog)
    dialog.setMinimumDuration(0)
    dialog.show()
    qtbot.waitExposed(dialog)
    cancel = dialog.findChild(QPushButton)
    where = [cancel.mapToGlobal(cancel.rect().topLeft()).toTuple() + (dialog.width(),)]
    for text in ("dequantizing token_embd.weight", "dequantizing blk.13.ffn_norm.weight",
                 "dequantizing blk.17.attn_output.weight, then the rest of a very long stage name " * 3):
        dialog.setLabelText(text)
        dialog.setValue(dialog.value() + 10)
        qtbot.wait(20)
        where.append(cancel.mapToGlobal(cancel.rect().topLeft()).toTuple() + (dialog.width(),))
    assert len(set(where)) == 1, f"Cancel (x, y) and the dialog's width moved: {where}"
    label = dialog.findChild(QLabel)
    assert label.text().startswith("dequantizing blk.17") and label.text().endswith("…")
    assert dialog.toolTip().count("very long stage name") == 3
