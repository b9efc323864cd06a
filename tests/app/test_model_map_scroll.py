"""The model map scrolled to the selected block starts in a gap between columns: no box is cut at the view's left
edge, and the map's start stays in sight where it fits beside the block. Scrolled only as far as the block
needed, the view cut the first column mid-word ('ens (ids)' for
'tokens (ids)', walking Learn's stop 7 at 1366x768, where the map is about 610 px wide).

Judged by geometry: the view's visible scene rectangle against every box's.
"""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from explorer.app.panels.model_map import ModelMapPanel
from explorer.app.state.session import Session
from tests.app.test_model_map import bundled


def first_box_margin(panel) -> float:
    """The room the scene leaves before its first box (the view cannot start nearer than the scene's edge)."""
    return min(item.sceneBoundingRect().left() for item in panel.items.values()) - panel.scene.sceneRect().left()


@pytest.mark.parametrize("width", [560, 610, 700, 820])
@pytest.mark.parametrize("layer", [0, 1, 2, 3])
def test_the_selected_block_is_in_sight_and_no_box_is_cut_at_the_left_edge(qtbot, width, layer):
    session = Session()
    panel = ModelMapPanel(session)
    qtbot.addWidget(panel)
    panel.resize(width, 560)
    panel.show()
    session.set_model(bundled("shakespeare-gqa")[1])
    qtbot.waitUntil(lambda: bool(panel.items))
    session.select(layer=layer)
    QApplication.processEvents()
    view = panel.view
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    boxes = {item.node.label: item.sceneBoundingRect() for item in panel.items.values()}
    cut = [label for label, box in boxes.items() if box.left() < visible.left() - 0.5 < box.right()]
    assert not cut, f"cut at the left edge ({visible.left():.0f}): {cut}"
    selected = [item.sceneBoundingRect() for item in panel.items.values() if layer in item.node.layers]
    first, margin = min(box.left() for box in boxes.values()), first_box_margin(panel)
    if max(box.right() for box in selected) - first + margin <= visible.width():    # the map's start fits beside it
        assert visible.left() <= first, f"the inputs are scrolled away ({visible.left():.0f}) with room for them"
    assert all(visible.left() <= box.left() and box.right() <= visible.right() + 0.5 for box in selected), \
        (visible, selected[0])
