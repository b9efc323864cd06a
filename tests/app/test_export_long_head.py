"""Exporting one head of a long trace from the window (Ctrl+E, the panel's menu): PNG and SVG draw the
block maxima over the real extent, with the extent in the title, computed off the GUI thread or taken
from the maps the panel keeps, never as the dense T × T map; the image dialog offers the exact .npy.

Expectations come from the trace's own Q and K with plain numpy (test_attention_long_prompt.exact_map)."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

from explorer.app.figures import export_dialogs
from explorer.core.trace import Trace
from explorer.views import long_maps
from tests.app.long_prompt import SIDE, spy
from tests.app.test_attention_long_prompt import N, block_max, exact_map, show
from tests.app.test_export_legibility import assert_legible
from tests.app.text_contrast import paper_luminance, rendered

SIZE = (800, 600)
FACTOR = N // SIDE


@pytest.fixture
def dense(monkeypatch):
    """The threads on which a dense T × T head was built (Trace.attention_head)."""
    return spy(monkeypatch, Trace, "attention_head")


def answer(monkeypatch, path: Path, asked: list | None = None) -> None:
    def ask_path(parent, title, name, filters):
        if asked is not None:
            asked.append(filters)
        return path

    monkeypatch.setattr(export_dialogs, "ask_path", ask_path)
    monkeypatch.setattr(export_dialogs, "ask_size", lambda parent, default=None: SIZE)


def export_head(qtbot, panel, action: int = 0) -> Path:
    panel.export_actions()[action].trigger()
    with qtbot.waitSignal(panel.long_export.written, timeout=30000) as written:
        pass
    return written.args[0]


def assert_block_maxima(drawn, expected) -> None:
    np.testing.assert_array_equal(np.isnan(drawn), np.isnan(expected))
    np.testing.assert_allclose(drawn[np.isfinite(drawn)], expected[np.isfinite(expected)], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_ctrl_e_exports_the_shown_head_from_its_kept_map(qtbot, long_panel, head_trace, exported, dense, computed_in,
                                                         monkeypatch, tmp_path, suffix):
    show(qtbot, long_panel, head_trace, layer=1, head=2)                # the large view computed and kept the head
    path = tmp_path / f"head{suffix}"
    answer(monkeypatch, path)
    long_panel.export_actions()[0].trigger()                       # Ctrl+E's action: "Export this head"
    assert not path.exists()                                  # the GUI thread went on; the file comes after
    with qtbot.waitSignal(long_panel.long_export.written, timeout=30000) as written:
        pass
    assert written.args == [path] and path.exists()
    assert dense == [] and "attention-export" not in computed_in           # no dense map, nothing computed again
    drawn = exported[path.name]
    assert_block_maxima(drawn["image"], block_max(exact_map(head_trace, 1, 2), FACTOR))
    assert drawn["extent"] == (N, N)                                     # the axes count real tokens
    assert f"({N}×{N}, {FACTOR}×{FACTOR} block maxima)" in drawn["title"]
    assert_legible(path, drawn["rects"], SIZE)
    assert paper_luminance(rendered(path, SIZE)) > 0.85
    if suffix == ".png":
        assert (QImage(str(path)).width(), QImage(str(path)).height()) == SIZE
    else:
        assert f"{N}×{N}" in path.read_text(encoding="utf-8")


def test_a_head_not_shown_is_computed_off_the_gui_thread(qtbot, long_panel, head_trace, exported, dense, computed_in,
                                                         monkeypatch, tmp_path):
    show(qtbot, long_panel, head_trace, layer=1, head=2)
    long_panel.long_head.maps.clear()                              # nothing kept: the export computes the head
    path = tmp_path / "head.png"
    answer(monkeypatch, path)
    assert export_head(qtbot, long_panel) == path
    assert "attention-export" in computed_in and threading.main_thread().name not in computed_in and dense == []
    assert exported[path.name]["thread"] is threading.main_thread()      # only the layout is the GUI's
    assert_block_maxima(exported[path.name]["image"], block_max(exact_map(head_trace, 1, 2), FACTOR))


def test_all_heads_of_a_layer_export_as_block_maxima_off_the_gui_thread(qtbot, long_panel, head_trace, exported, dense,
                                                                       computed_in, monkeypatch, tmp_path):
    show(qtbot, long_panel, head_trace, layer=1, head=2)
    path = tmp_path / "layer.png"
    answer(monkeypatch, path)
    assert export_head(qtbot, long_panel, action=1) == path         # "Export all heads of this layer"
    assert dense == [] and "attention-export" in computed_in and threading.main_thread().name not in computed_in
    drawn = exported[path.name]
    assert len(drawn["images"]) == head_trace.model.n_heads
    for head, image in enumerate(drawn["images"]):
        assert_block_maxima(image, block_max(exact_map(head_trace, 1, head), FACTOR))
    assert f"all {head_trace.model.n_heads} heads ({N}×{N}, {FACTOR}×{FACTOR} block maxima)" in drawn["title"]
    assert_legible(path, drawn["rects"], SIZE)


@pytest.mark.parametrize("action", [0, 3])                # the image dialog's exact .npy; the raw matrix's
def test_the_exact_npy_is_offered_and_written_off_the_gui_thread(qtbot, long_panel, head_trace, dense, monkeypatch,
                                                                 tmp_path, action):
    show(qtbot, long_panel, head_trace, layer=0, head=1)
    path, asked = tmp_path / "head.npy", []
    answer(monkeypatch, path, asked)
    assert export_head(qtbot, long_panel, action) == path
    assert "*.npy" in asked[0]
    assert dense and threading.main_thread().name not in dense      # the T × T matrix, built on the export's thread
    written = np.load(path)
    assert written.shape == (N, N)
    np.testing.assert_allclose(written, np.nan_to_num(exact_map(head_trace, 0, 1)), rtol=1e-4, atol=1e-6)


def test_an_unwritable_path_is_reported_in_one_sentence(qtbot, long_panel, head_trace, monkeypatch, tmp_path):
    show(qtbot, long_panel, head_trace, layer=1, head=2)
    errors = []
    long_panel.session.error_raised.connect(errors.append)
    answer(monkeypatch, tmp_path / "missing" / "head.png")
    long_panel.export_actions()[0].trigger()
    assert len(errors) == 1 and "does not exist" in errors[0] and not long_panel.long_export.running


def test_ctrl_e_in_the_window_writes_a_legible_long_head(qtbot, head_trace, exported, dense, monkeypatch, tmp_path):
    from tests.app.shared_window import make_window

    monkeypatch.setattr(long_maps, "DISPLAY_SIDE", SIDE)
    window = make_window(qtbot, tmp_path)
    long_panel = window.docks["attention"].widget()
    window.resize(1366, 768)
    with qtbot.waitSignal(long_panel.long_head.shown, timeout=20000):
        window.session.set_model(head_trace.model)
        window.session.set_trace(head_trace)
        window.session.select(layer=1, head=2)
    path = tmp_path / "ctrl_e.png"
    answer(monkeypatch, path)
    window.menus.export_focused_panel()                       # Ctrl+E
    assert not path.exists()
    with qtbot.waitSignal(long_panel.long_export.written, timeout=30000):
        pass
    assert dense == [] and f"{N}×{N}" in exported[path.name]["title"]
    assert_legible(path, exported[path.name]["rects"], SIZE)
    width, height = QImage(str(path)).width(), QImage(str(path)).height()    # the file as written
    assert window.statusBar().currentMessage() == f"Saved {path.name} ({width}×{height} px)"
    window.close()


def test_the_query_title_stands_clear_of_the_numbered_ticks(qtbot, head_trace):
    from PySide6.QtGui import QFont, QFontMetrics

    from explorer.drawing.figures import attention_figure

    figure = attention_figure(head_trace, 1, 2, *SIZE)
    axis = figure.heatmaps[0].axes["left"]
    metrics = QFontMetrics(axis.style["tickFont"] or QFont())
    lo, hi = axis.range
    shown = [text for _, values in axis.tickValues(lo, hi, axis.height()) for text in axis.tickStrings(values, 1, 1)]
    widest = max(metrics.horizontalAdvance(text) for text in shown)      # the tick labels, right-aligned
    title = axis.label.mapRectToParent(axis.label.boundingRect())        # "query", upright at the left edge
    assert axis.label.isVisible() and shown
    assert title.right() + widest <= axis.width(), (title.right(), widest, axis.width())
    figure.close()
