"""The Attention panel's grid of every head scrolls the selected head's tile into sight whenever the shared selection
changes, wherever it was changed (issue 22): choosing a head in Why this token selected it, but in a grid that
scrolls (SmolLM2's 30 layers x 9 heads at 1366x768) its tile stayed out of sight.

A scroll by hand is kept when the panel is laid out anew (a resize, a dock moved) with the same selection: the grid
scrolled back to the selected head at every relayout.

Expectation: the tile's corners, from the mosaic's own tile origin and shape mapped through the grid's ViewBox to the
scroll area's viewport, lie inside the viewport (rounding of a px allowed).
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from explorer.app.panels.attention import AttentionPanel
from tests.app.screen_fit import settle
from tests.app.smollm2_window import smollm2_at_1366, tile_rect
from tests.app.synthetic_trace import build_trace

PROMPT = "The capital of France is"
FAR_HEADS = ((29, 8), (0, 0), (15, 8), (29, 0))      # last, first, the far right of a middle row, bottom left


def tile_in_viewport(panel: AttentionPanel, layer: int, head: int) -> tuple[QRectF, QRectF]:
    """The head's tile (its cells' outer edges) and the scroll area's viewport, both in the viewport's px."""
    return tile_rect(panel, layer, head), QRectF(panel.grid_scroll.viewport().rect())


def check_in_sight(qtbot, panel: AttentionPanel, layer: int, head: int, where: str) -> None:
    def in_sight() -> None:
        tile, viewport = tile_in_viewport(panel, layer, head)
        assert viewport.adjusted(-1, -1, 1, 1).contains(tile), \
            f"{where}: the tile of layer {layer}, head {head} is at {tile.getCoords()}, the viewport {viewport}"
    qtbot.waitUntil(in_sight, timeout=5000)


@pytest.mark.realmodel
def test_a_head_selected_anywhere_is_scrolled_into_sight_in_the_main_window(qtbot, tmp_path, dialogs):
    with smollm2_at_1366(qtbot, tmp_path, PROMPT) as (window, panel):
        scroll = panel.grid_scroll
        assert scroll.verticalScrollBar().maximum() > 0, "the grid fits: nothing to scroll to"
        for layer, head in FAR_HEADS:
            window.session.select(layer=layer, head=head)          # as Why this token's head list does
            check_in_sight(qtbot, panel, layer, head, "1366x768")
        why = window.docks["attribution"]                # Why this token, in front of the grid's tab group
        why.show()
        why.raise_()
        settle(0.3)
        window.session.select(layer=22, head=7)
        window.docks["attention"].raise_()
        check_in_sight(qtbot, panel, 22, 7, "1366x768, raised after a choice made behind Why this token")


def test_a_selected_head_is_scrolled_into_sight_in_a_small_panel(qtbot, open_panel):
    """The same with a synthetic trace of 30 layers x 9 heads in a panel too small for the grid either way."""
    trace = build_trace(n_layers=30, n_heads=9, n_kv_heads=3, prompt_len=6, steps=1)
    panel = open_panel(AttentionPanel, trace.model, (700, 420))
    panel.session.set_trace(trace)
    settle(0.5)
    assert panel.grid_scroll.verticalScrollBar().maximum() > 0, "the grid fits: nothing to scroll to"
    for layer, head in FAR_HEADS:
        panel.session.select(layer=layer, head=head)
        check_in_sight(qtbot, panel, layer, head, "700x420")
    panel.resize(QSize(760, 460))                         # laid out anew: the selected tile is kept in sight
    check_in_sight(qtbot, panel, *FAR_HEADS[-1], "resized to 760x460")


def wheel_up(panel: AttentionPanel) -> None:
    """One notch of a mouse wheel turned up over the tiles, as a person scrolls."""
    viewport = panel.grid_view.viewport()
    centre = QPointF(viewport.rect().center())
    QApplication.sendEvent(viewport, QWheelEvent(centre, QPointF(viewport.mapToGlobal(centre)), QPoint(),
                                                 QPoint(0, 120), Qt.MouseButton.NoButton,
                                                 Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False))


def test_a_scroll_by_hand_is_kept_when_the_panel_is_laid_out_anew(qtbot, open_panel):
    """Layer 29 selected, the person wheels up to the first layers: resized, the grid keeps them in sight rather than
    going back to layer 29; a head selected again is scrolled to."""
    trace = build_trace(n_layers=30, n_heads=9, n_kv_heads=3, prompt_len=6, steps=1)
    panel = open_panel(AttentionPanel, trace.model, (700, 420))
    panel.session.set_trace(trace)
    settle(0.5)
    panel.session.select(layer=29, head=0)
    check_in_sight(qtbot, panel, 29, 0, "700x420")
    settle(0.5)                                          # the panel idle before the person scrolls
    bar = panel.grid_scroll.verticalScrollBar()
    for _ in range(200):
        if bar.value() == 0:
            break
        wheel_up(panel)
    assert bar.value() == 0, "the wheel did not scroll the grid to the top"
    check_in_sight(qtbot, panel, 0, 0, "wheeled to the top")
    for width, height in ((760, 460), (640, 400), (700, 420)):
        panel.resize(QSize(width, height))               # laid out anew, the selection unchanged
        settle(0.5)
        tile, viewport = tile_in_viewport(panel, 0, 0)
        assert viewport.adjusted(-1, -1, 1, 1).contains(tile), \
            f"resized to {width}x{height}: the first layer scrolled to by hand is at {tile.getCoords()}, the " \
            f"viewport {viewport}"
    panel.session.select(layer=28, head=3)
    check_in_sight(qtbot, panel, 28, 3, "selected after the scroll by hand")
