"""'Export the full grid' of a long trace: the grid filler's kept tiles when the grid is complete (no head
computed again), else every head's block maxima off the GUI thread (LongExport), the file written when
done and said in the status bar; Cancel writes nothing.

Expectations: block maxima of the trace's own Q and K with plain numpy (test_attention_long_prompt.exact_map)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QMainWindow, QStatusBar

from explorer.app.panels import AttentionPanel
from explorer.app.state.session import Session
from explorer.views import long_maps
from explorer.views.grid import tile_block
from tests.app.test_attention_long_prompt import N, block_max, exact_map
from tests.app.test_export_legibility import assert_legible
from tests.app.test_export_long_head import answer, assert_block_maxima

GRID = 2                  # "Export the full grid as PNG/SVG…"


@pytest.fixture
def panel(qtbot):
    """The panel in a main window of its own, whose status bar says what an export saved."""
    host = QMainWindow()
    qtbot.addWidget(host)
    panel = AttentionPanel(Session())
    host.setCentralWidget(panel)
    host.setStatusBar(QStatusBar())
    host.resize(900, 650)
    host.show()
    panel.host = host                      # kept alive with the panel
    panel.said = []
    panel.say = panel.said.append
    return panel


def said_saved(panel, path) -> bool:
    """The status bar of the panel's window names the file and its size as written."""
    image = QImage(str(path))
    line = panel.window().statusBar().currentMessage()
    return line == f"Saved {path.name} ({image.width()}×{image.height()} px)"


def tiles_of(image: np.ndarray, n_layers: int, n_heads: int, r: int, c: int):
    """Tile (layer, head) of a grid image laid out layers down, heads across, one NaN gutter between."""
    for layer in range(n_layers):
        for head in range(n_heads):
            yield layer, head, image[layer * (r + 1):layer * (r + 1) + r, head * (c + 1):head * (c + 1) + c]


def assert_grid_is_block_maxima(drawn: np.ndarray, trace) -> None:
    block = tile_block(N, N)
    side = -(-N // block)
    model = trace.model
    assert drawn.shape == (model.n_layers * (side + 1) - 1, model.n_heads * (side + 1) - 1)
    for layer, head, tile in tiles_of(drawn, model.n_layers, model.n_heads, side, side):
        assert_block_maxima(tile, block_max(exact_map(trace, layer, head), block))


def fill(qtbot, panel, trace) -> None:
    with qtbot.waitSignal(panel.filler.finished, timeout=120000) as finished:
        panel.session.set_trace(trace)
    assert finished.args == [True]


def test_a_complete_grid_is_exported_from_its_kept_tiles(qtbot, panel, head_trace, exported, computed_in,
                                                         monkeypatch, tmp_path):
    fill(qtbot, panel, head_trace)
    computed_in.clear()
    path = tmp_path / "grid.png"
    answer(monkeypatch, path)
    panel.export_actions()[GRID].trigger()
    assert not path.exists()                                  # written when the thread is done
    with qtbot.waitSignal(panel.long_export.written, timeout=30000) as written:
        pass
    assert written.args == [path] and path.exists()
    assert computed_in == []                                     # no head computed again
    assert_grid_is_block_maxima(exported[path.name]["image"], head_trace)
    assert said_saved(panel, path), panel.window().statusBar().currentMessage()
    assert_legible(path, exported[path.name]["rects"], (800, 600))


def test_an_incomplete_grid_is_computed_off_the_gui_thread(qtbot, panel, head_trace, exported, computed_in,
                                                           monkeypatch, tmp_path):
    panel.session.set_trace(head_trace)
    panel.filler.cancel()
    panel.filler.tiles.clear()
    computed_in.clear()
    path = tmp_path / "grid.svg"
    answer(monkeypatch, path)
    panel.export_actions()[GRID].trigger()
    assert not path.exists() and panel.long_export.running    # the GUI thread went on
    assert any("Exporting the full grid" in text for text in panel.said)
    with qtbot.waitSignal(panel.long_export.written, timeout=120000):
        pass
    n_heads = head_trace.model.n_layers * head_trace.model.n_heads
    assert computed_in.count("attention-export") == n_heads and threading.main_thread().name not in computed_in
    assert_grid_is_block_maxima(exported[path.name]["image"], head_trace)
    assert said_saved(panel, path), panel.window().statusBar().currentMessage()


def test_the_panels_cancel_stops_the_export_and_writes_no_file(qtbot, panel, head_trace, monkeypatch, tmp_path):
    panel.session.set_trace(head_trace)
    panel.filler.cancel()
    panel.filler.tiles.clear()
    path = tmp_path / "grid.png"
    answer(monkeypatch, path)
    written = []
    panel.long_export.written.connect(written.append)
    original, calls = long_maps.block_maxima, []

    def held(*args, cancelled=None, **kwargs):            # every head after the first waits for Cancel
        if calls:
            while not cancelled():
                time.sleep(0.01)
        calls.append(threading.current_thread().name)
        return original(*args, cancelled=cancelled, **kwargs)

    monkeypatch.setattr(long_maps, "block_maxima", held)
    panel.export_actions()[GRID].trigger()
    assert panel.long_export.running
    qtbot.waitUntil(lambda: "exporting the full grid: heads" in panel.grid_progress.label.text(), timeout=30000)
    assert not panel.grid_progress.isHidden()                 # the panel's progress, with its Cancel
    panel.grid_progress.cancel_button.click()
    assert not panel.long_export.running and panel.grid_progress.isHidden()
    qtbot.waitUntil(lambda: not any(t.name == "attention-export" for t in threading.enumerate()), timeout=30000)
    qtbot.wait(200)                                           # the thread's last signal, had it one
    assert calls == ["attention-export"] * 2               # the second head was cut short
    assert written == [] and not path.exists() and list(tmp_path.iterdir()) == []
