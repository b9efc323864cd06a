"""Show the work ▸ Export … as shown on screen keeps its plots (drive21 S1): the picture grows the panel so that its
derivation text is drawn whole (export.whole_tables), and grown so, the panel laid itself out for a tall room, the
text taking the whole height: the saved map's axis was ~0 px tall and the q·k bars a ~10 px sliver while on screen
both were fine.

Expectation, from the panel on screen alone: while the picture is taken the map's and the bars' views are at least
as large as on screen, the text shows its whole document with no scroll bar, and the PNG holds the grab; the panel on
screen is as it was afterwards.
"""
from __future__ import annotations

from PySide6.QtGui import QImage

from explorer.drawing import export
from tests.app.derivation_panel import derived_in_room


def sizes(panel) -> dict[str, tuple[int, int]]:
    """The map's and the bars' view boxes, in px (what a reader sees of each plot)."""
    boxes = {"map": panel.map.plot.getViewBox(), "bars": panel.products.getViewBox()}
    return {name: (int(box.size().width()), int(box.size().height())) for name, box in boxes.items()}


def test_the_derivation_picture_keeps_its_plots(qtbot, traced_llama, tmp_path):
    panel = derived_in_room(qtbot, traced_llama, (1036, 420))
    assert panel.text.verticalScrollBar().maximum() > 0, "the derivation fits its box: nothing to grow"
    shown, before = sizes(panel), panel.size()
    assert min(min(side) for side in shown.values()) >= 60, shown
    seen = {}
    grab = panel.grab

    def grabbing(*args):
        seen.update(plots=sizes(panel), bar=panel.text.verticalScrollBar().isVisible(),
                    viewport=panel.text.viewport().height(),
                    whole=panel.text.document().size().height())
        return grab(*args)

    panel.grab = grabbing
    path = export.save_widget(panel, tmp_path / "derivation.png")
    for name, (width, height) in shown.items():
        got = seen["plots"][name]
        assert got[0] >= width - 2 and got[1] >= height - 2, f"{name}: {got} in the picture, {(width, height)} shown"
    assert not seen["bar"] and seen["viewport"] >= seen["whole"] - 1, seen
    assert QImage(str(path)).height() >= before.height()
    assert panel.size() == before and sizes(panel) == shown          # on screen as it was
