"""Residual stream ▸ Export … as shown on screen, taken right after a model switch while the panel is still reading
the new model's stream (its working state, cleared of the old model's layers): the export waits for the drawing,
and the picture is of the new model's layers, not of the cleared panel (issue 22).

Expectation, from the new model's config.json (num_hidden_layers) and the written PNG alone: the picture's table has
one layer's column (a wide dock) or row (a tall one) per layer of the new model, counted as the grid lines the
table draws beside its columns or under its rows.
"""
from __future__ import annotations

import json

import pytest
from PySide6.QtGui import QImage

from explorer.app.figures import export_dialogs
from tests.app.test_export_residual_whole_table import grid_lines, rgb
from tests.app.test_stale_switch import BUNDLED
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import new_window, opened

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def test_an_export_right_after_a_switch_is_of_the_new_models_drawn_stream(qtbot, tmp_path, monkeypatch):
    folder = make_tiny_llama(tmp_path / "tiny-llama", n_layers=9)
    n_layers = json.loads((folder / "config.json").read_text())["num_hidden_layers"]
    window = new_window(qtbot, tmp_path)
    try:
        opened(qtbot, window, BUNDLED / "shakespeare-mla")
        dock = window.docks["residual"]
        dock.show()
        dock.raise_()
        panel = dock.widget()
        qtbot.waitUntil(lambda: panel.stream is not None, timeout=60000)
        window.open_model(str(folder))
        qtbot.waitUntil(lambda: window.session.trace is not None and window.session.trace.model.name
                        == window.controller.summary.name and panel.is_shown() and panel.stream is None,
                        timeout=60000)
        path = tmp_path / "residual.png"
        monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: path)
        next(a for a in panel.export_actions() if "as shown on screen" in a.text()).trigger()
        qtbot.waitUntil(path.exists, timeout=60000)
        rows, columns = grid_lines(rgb(QImage(str(path))))
        layers = columns if panel.layers_across else rows       # (a tall dock: one row per layer)
        assert layers == n_layers, f"the picture's table has {layers} layers, the new model {n_layers}"
    finally:
        window.close()
