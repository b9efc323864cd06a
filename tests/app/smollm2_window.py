"""The real main window on SmolLM2 (30 layers x 9 heads) at the emulated 1366x768 screen, its Attention panel raised
and its head grid drawn: the set-up the head grid's tests of wrapping (test_grid_wraps_heads) and of following the
selection (test_grid_follows_selection) share (grid_at: any model and screen, MiniLM's tile size test too), and the
tile's place in the scroll area's viewport they measure.
"""
from __future__ import annotations

from contextlib import contextmanager

import pytest
from PySide6.QtCore import QPointF, QRectF, QSize

from explorer.app.panels.attention import AttentionPanel
from explorer.core import store
from tests.app.screen_fit import SCREENS, emulated_screen, settle
from tests.app.stress_window import learn
from tests.app.window_helpers import idle, new_window

SMOLLM2 = store.pulled_path("smollm2-135m")          # looked up before a test's empty store
SCREEN = SCREENS["1366x768"]


@contextmanager
def smollm2_at_1366(qtbot, tmp_path, prompt: str, with_learn: bool = False):
    """(window, panel): SmolLM2 opened on `prompt` in a new main window of the 1366x768 screen, the Attention panel
    raised (beside Help ▸ Learn's dock where `with_learn`) with its grid of 30 x 9 heads drawn; closed afterwards.
    Skips where SmolLM2 is not pulled."""
    if SMOLLM2 is None:
        pytest.skip("smollm2-135m is not pulled")
    with grid_at(qtbot, tmp_path, SMOLLM2, prompt, SCREEN, with_learn) as (window, panel):
        assert (panel.mosaic.n_layers, panel.mosaic.n_heads) == (30, 9)
        yield window, panel


@contextmanager
def grid_at(qtbot, tmp_path, folder, prompt: str, screen: QSize, with_learn: bool = False):
    """(window, panel): the model at `folder` opened on `prompt` in a new main window filling `screen`, the
    Attention panel raised (beside Help ▸ Learn's dock where `with_learn`) with its head grid drawn; closed
    afterwards."""
    with emulated_screen(screen):
        window = new_window(qtbot, tmp_path)
        try:
            window.resize(screen)
            window.prompt.set_text(prompt)
            window.open_model(str(folder))
            idle(qtbot, window, lambda: window.session.trace is not None)
            if with_learn:
                learn(window)
            panel = window.findChild(AttentionPanel)
            window.docks["attention"].raise_()
            qtbot.waitUntil(lambda: panel.mosaic is not None and panel.grid_view.isVisible())
            idle(qtbot, window)
            settle(0.5)
            yield window, panel
        finally:
            window.close()


def tile_rect(panel: AttentionPanel, layer: int, head: int) -> QRectF:
    """The head's tile (its cells' outer edges) in the scroll area's viewport px, from the mosaic's own tile origin
    and shape mapped through the grid's ViewBox."""
    rows, columns = panel.mosaic.tile_px
    top, left = panel.mosaic.tile_origin(layer, head)
    box, view = panel.grid.plot.getViewBox(), panel.grid_view
    corners = [view.viewport().mapTo(panel.grid_scroll.viewport(), view.mapFromScene(box.mapViewToScene(point)))
               for point in (QPointF(left - 0.5, top - 0.5), QPointF(left - 0.5 + columns, top - 0.5 + rows))]
    return QRectF(QPointF(corners[0]), QPointF(corners[1]))
