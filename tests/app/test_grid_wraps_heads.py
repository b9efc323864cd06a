"""The Attention panel's grid wraps a layer's heads onto rows of as many as the width holds (drive21 m13, m5):
at 1366x768 SmolLM2's grid showed heads H0–H2 of 9 and shakespeare-mqa's H0–H1 of 6, the rest behind a
horizontal scroll bar; the translator's four 1 x 1 tiles beside Learn hid H3 over ~300 px of empty grey.

Expectation: in the main window every head of the selected layer, its tile's corners (from the mosaic's own tile
origin and shape) mapped through the grid's ViewBox to the scroll area's viewport, lies inside the viewport; a
click on the last head's tile, on a row of its own, selects that head. A shrink to the least size and a regrow leave the
grid as it was fresh at 1366x768 (it stayed scrolled, "L0" cut to ".0", the heads' labels out of sight: drive 22).
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRectF, QSize, Qt
from PySide6.QtTest import QTest

from explorer.app.panels.attention import AttentionPanel
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS, settle, steady
from tests.app.smollm2_window import SCREEN, smollm2_at_1366, tile_rect
from tests.app.stress_window import learn
from tests.app.window_helpers import idle

LONG_PROMPT = "The capital of France is Paris, and the capital of Germany is Berlin, and the capital of Italy is"


def check_layer_in_sight(qtbot, panel: AttentionPanel, layer: int, where: str) -> None:
    def in_sight() -> None:
        viewport = QRectF(panel.grid_scroll.viewport().rect()).adjusted(-1, -1, 1, 1)
        for head in range(panel.mosaic.n_heads):
            tile = tile_rect(panel, layer, head)
            assert viewport.contains(tile), f"{where}: layer {layer} head {head} at {tile.getCoords()}, {viewport}"
    qtbot.waitUntil(in_sight, timeout=5000)


def click_tile(qtbot, panel: AttentionPanel, layer: int, head: int) -> None:
    """A left click on the middle of the head's tile, as a person clicks."""
    rows, columns = panel.mosaic.tile_px
    top, left = panel.mosaic.tile_origin(layer, head)
    view = panel.grid_view
    point = view.mapFromScene(panel.grid.scene_pos_of(top + (rows - 1) / 2, left + (columns - 1) / 2))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(point.x(), point.y()))
    qtbot.waitUntil(lambda: panel.session.selection.head == head and panel.session.selection.layer == layer,
                    timeout=5000)


def check_wrapped_and_clickable(qtbot, panel: AttentionPanel, layer: int, where: str) -> None:
    """Every head of `layer` in sight; a click on its last head (on a wrapped row) selects it, still in sight."""
    check_layer_in_sight(qtbot, panel, layer, where)
    grid = panel.mosaic
    last = grid.n_heads - 1
    assert grid.per_row is not None and grid.tile_origin(layer, last)[0] > grid.tile_origin(layer, 0)[0], \
        f"{where}: the heads were not wrapped ({grid.per_row} a row)"
    click_tile(qtbot, panel, layer, last)
    check_layer_in_sight(qtbot, panel, layer, f"{where}, head {last} clicked")


@pytest.mark.realmodel
def test_smollm2s_nine_heads_are_in_sight_at_1366(qtbot, tmp_path, dialogs):
    with smollm2_at_1366(qtbot, tmp_path, LONG_PROMPT) as (window, panel):    # >= 12 tokens: tiles of 48 px at least
        window.session.select(layer=12, head=0)
        check_wrapped_and_clickable(qtbot, panel, 12, "SmolLM2 at 1366x768")


@pytest.mark.usefixtures("store_home")                 # the store in the test's folder
def test_shakespeare_mqas_six_heads_are_in_sight_at_1366(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(BUNDLED / "shakespeare-mqa", "To be, or not to be, that is the question")
        panel = journey.raise_panel("attention")
        journey.idle("drawing attention")
        settle(0.5)
        layer = journey.window.session.selection.layer
        check_wrapped_and_clickable(qtbot, panel, layer, "shakespeare-mqa at 1366x768")


@pytest.mark.usefixtures("store_home")
def test_translators_heads_beside_learn_are_in_sight_at_1366(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The cat sat on the mat.")
        learn(journey.window)                                        # Help ▸ Learn: its dock beside the panels
        panel = journey.raise_panel("attention")
        journey.idle("drawing attention")
        settle(0.5)
        layer = min(journey.window.session.selection.layer, panel.mosaic.n_layers - 1)

        def mostly_in_sight() -> None:
            # the dock leaves the tiles under MIN_PLOT_PX (a plot narrower is a strip of ticks): the plot keeps
            # that width and reaches a few px past the viewport, never a whole head
            viewport = QRectF(panel.grid_scroll.viewport().rect())
            for head in range(panel.mosaic.n_heads):
                tile = tile_rect(panel, layer, head)
                seen = tile.intersected(viewport)
                assert seen.width() * seen.height() >= 0.8 * tile.width() * tile.height(), \
                    f"head {head} at {tile.getCoords()} is out of the viewport {viewport}"
        qtbot.waitUntil(mostly_in_sight, timeout=5000)


def laid_out(panel: AttentionPanel) -> dict:
    """What a person sees of the grid: its tiles' sides and wrap, where it is scrolled, the selected tile's place."""
    scroll = panel.grid_scroll
    selection = panel.session.selection
    return {"view": panel.grid_view.size().toTuple(), "per_row": panel.mosaic.per_row,
            "range": panel.grid.plot.getViewBox().viewRange(),
            "scrolled": (scroll.horizontalScrollBar().value(), scroll.verticalScrollBar().value()),
            "selected tile": tile_rect(panel, selection.layer, selection.head).getCoords()}


@pytest.mark.realmodel
@pytest.mark.parametrize("prompt", [LONG_PROMPT, "The quick brown fox jumps over the lazy"])
def test_a_shrink_to_the_least_size_and_regrow_lays_the_grid_out_as_fresh(qtbot, tmp_path, dialogs, prompt):
    """Shrunk to its least size (a head far off looked at there, then the first again) and regrown to 1366x768, the
    window's grid is laid out as it was fresh at 1366x768: scrolled to the left and top, the labels in sight."""
    with smollm2_at_1366(qtbot, tmp_path, prompt, with_learn=True) as (window, panel):
        window.session.select(layer=0, head=0)
        fresh = steady(lambda: laid_out(panel))                 # Learn's column placed, the grid laid out for it
        assert fresh["scrolled"] == (0, 0), "fresh, the first head is in sight with the labels"
        window.resize(QSize(100, 100))                                   # the window's least size
        settle(1.0)
        for layer, head in ((29, 8), (0, 0)):
            window.session.select(layer=layer, head=head)
            settle(0.5)
        window.resize(SCREEN)
        idle(qtbot, window)
        assert steady(lambda: laid_out(panel)) == fresh



@pytest.mark.realmodel
def test_smollm2s_heads_wrap_beside_learn(qtbot, tmp_path, dialogs):
    """Beside Learn at 1366x768 the grid had 167 px, 10 too few for a plot of MIN_PLOT_PX beside its axes, and
    SmolLM2's nine heads a layer ran in one row behind a sideways scroll bar. Expectation: the heads wrap and
    nothing scrolls sideways; the large map keeps more than half the splitter and a legible view."""
    from explorer.app.widgets.kv_occupancy import MIN_PLOT_PX

    with smollm2_at_1366(qtbot, tmp_path, LONG_PROMPT, with_learn=True) as (window, panel):
        window.session.select(layer=12, head=0)
        check_wrapped_and_clickable(qtbot, panel, 12, "SmolLM2 beside Learn at 1366x768")
        assert panel.grid_scroll.horizontalScrollBar().maximum() == 0, "the grid scrolls sideways"
        large, grid = panel.splitter.sizes()
        assert large > grid and panel.large.plot.getViewBox().width() >= MIN_PLOT_PX, (large, grid)

