"""A greyed action says why it is greyed: its tooltip holds the reason (a run of the prompt alone has nothing to
animate), and Qt's menus show an action's tooltip only where the menu is told to. Both menus that offer a panel's
exports (File ▸ Export ▸ <panel>, and the panel's right-click menu) show them."""
from __future__ import annotations

from PySide6.QtWidgets import QMenu

from explorer.app.panels.kv_cache import KVCachePanel
from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.shared_window import window_with_tiny_model


def greyed_with_a_reason(menu):
    return [a for a in menu.actions() if not a.isEnabled() and a.toolTip() and a.toolTip() != a.text()]


def test_greyed_exports_show_their_reason_in_both_menus(qapp, tmp_path):
    with emulated_screen(SCREENS["1366x768"]), window_with_tiny_model(qapp, tmp_path / "app", {}) as window:
        assert window.session.trace.n_steps == 1            # the prompt alone: nothing to animate
        window.menus.export.aboutToShow.emit()
        subs = window.menus.export.findChildren(QMenu)  # the panels' submenus, as filled when the menu opens
        greyed = [(sub, greyed_with_a_reason(sub)) for sub in subs if greyed_with_a_reason(sub)]
        assert greyed, "no greyed export with a reason in File ▸ Export"
        for sub, _actions in greyed:
            assert sub.toolTipsVisible(), f"File ▸ Export ▸ {sub.title()} hides why its actions are greyed"
        panel = next(dock.widget() for dock in window.docks.values() if isinstance(dock.widget(), KVCachePanel))
        menu = panel.context_menu()
        assert greyed_with_a_reason(menu), [a.text() for a in menu.actions()]
        assert menu.toolTipsVisible(), "the panel's right-click menu hides why its actions are greyed"
