"""File ▸ Export ▸ <panel> ▸ "as shown on screen" of a panel whose tab lies behind another: the panel is brought
in front and drawn for the current model before its picture is taken. It saved what it drew last (drive 15: the
bundled MLA model's 4-layer KV cache exported under SmolLM2, another model's message from the residual stream).
Expectation: at the moment of the picture the panel draws the session's model and trace (Panel.drawn, the
stale-view invariant) and is in sight."""
from __future__ import annotations

import pytest

from explorer.app.figures import export_dialogs
from tests.app.layout_probe import in_sight
from tests.app.test_stale_switch import BUNDLED, switch_to
from tests.app.window_helpers import idle, new_window, opened

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.mark.parametrize("name", ["kv_cache", "residual"])
def test_exporting_a_panel_behind_another_tab_draws_it_for_the_current_model_first(qtbot, tmp_path, monkeypatch,
                                                                                   name):
    window = new_window(qtbot, tmp_path)
    try:
        opened(qtbot, window, BUNDLED / "shakespeare-mla")
        dock = window.docks[name]
        dock.show()
        dock.raise_()
        idle(qtbot, window, lambda: dock.widget().is_shown())
        other = next(d for n, d in window.docks.items() if n != name and window.tabifiedDockWidgets(d)
                     and dock in window.tabifiedDockWidgets(d))
        other.raise_()                                   # its tab now lies behind another
        idle(qtbot, window, lambda: not dock.widget().is_shown())
        switch_to(qtbot, window, BUNDLED / "shakespeare-gqa")
        panel = dock.widget()
        assert not panel.is_shown()
        seen = []
        monkeypatch.setattr(export_dialogs, "ask_path", lambda *a: tmp_path / f"{name}.png")
        monkeypatch.setattr(export_dialogs, "save_widget",
                            lambda widget, path, theme: seen.append((panel.drawn(), in_sight(dock), path)))
        panel.export_actions()[0].trigger()
        qtbot.waitUntil(lambda: bool(seen), timeout=10000)
        drawn, shown, path = seen[0]
        session = window.session
        assert shown, f"{name} was saved out of sight"
        assert drawn.kind == "trace" and (drawn.model_id, drawn.trace_id) == (session.model_id, session.trace_id), \
            f"{name} saved what it drew for model {drawn.model_id} trace {drawn.trace_id}, not the current " \
            f"{session.model_id} {session.trace_id}"
    finally:
        window.close()
