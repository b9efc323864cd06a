"""Adding a panel is its module and one row of panels.registry: the window builds its dock, in the row's
area, with the row's tooltip, a View menu entry and a tab among the others; the import contract that keeps
panels apart names exactly the registry's modules (and Learn's), so a panel left out of one is caught."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout

import explorer.app.panels
from explorer.app.panels import registry
from explorer.app.panels.base import Panel
from tests.app.shared_window import make_window

ROOT = Path(__file__).resolve().parents[2]
PANELS_DIR = Path(explorer.app.panels.__file__).parent
# the package, the shared base (base, drawing_parts, panel_words), the list itself, Show the work's rich text,
# the residual stream's room (residual_room) and Next token's logit lens (next_token_lens)
NOT_PANELS = {"__init__", "base", "drawing_parts", "panel_words", "registry", "derivation_text", "tokens_text",
              "derivable", "residual_room", "attention_header", "next_token_lens"}


class ToyPanel(Panel):
    """A toy panel a test adds: what it shows is one label."""
    title = "Toy"
    object_name = "toy"

    def __init__(self, session) -> None:
        super().__init__(session)
        layout = QVBoxLayout()
        layout.addWidget(QLabel("toy"))
        self.body.addLayout(layout)

    def redraw(self) -> None:
        pass


def contract_modules() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    [independence] = [c for c in contracts if c["name"] == "A panel never imports another panel"]
    return set(independence["modules"])


def test_the_independence_contract_names_every_panel_module_and_only_those():
    on_disk = {f"explorer.app.panels.{path.stem}" for path in PANELS_DIR.glob("*.py") if path.stem not in NOT_PANELS}
    registered = {spec.cls.__module__ for spec in registry.PANELS}
    assert registered <= on_disk, "every registered panel lives in its own module under app/panels"
    assert contract_modules() == on_disk, "pyproject's contract lists each panel module (Learn's too)"


def test_each_row_is_a_panel_with_a_known_area_and_a_sentence():
    names = [spec.object_name for spec in registry.PANELS]
    assert len(names) == len(set(names))
    for spec in registry.PANELS:
        assert issubclass(spec.cls, Panel) and spec.title
        assert spec.area in {"left", "right", "bottom"}, spec
        assert spec.tip.endswith(".") and "\n" not in spec.tip, spec
        assert registry.spec(spec.object_name) is spec


@pytest.mark.parametrize("area", ["bottom", "left"])
def test_a_panel_added_as_one_row_gets_its_dock_area_tooltip_menu_and_tab(qtbot, tmp_path, monkeypatch, area):
    tip = "What a toy shows, in one sentence."
    monkeypatch.setattr(registry, "PANELS", (*registry.PANELS, registry.PanelSpec(ToyPanel, area, tip)))
    window = make_window(qtbot, tmp_path)
    try:
        dock = window.docks["toy"]
        assert dock.windowTitle() == "Toy" and dock.toolTip() == tip
        expected = {"bottom": Qt.DockWidgetArea.BottomDockWidgetArea, "left": Qt.DockWidgetArea.LeftDockWidgetArea}
        side = window.docks["embeddings"] if area == "bottom" else window.docks["tokens"]
        assert window.dockWidgetArea(dock) in (expected[area], window.dockWidgetArea(side))
        if area == "bottom":                    # a bottom panel is one more tab of the bottom group
            assert dock in window.tabifiedDockWidgets(window.docks["embeddings"])
        assert any(action.text().replace("&", "") == "Toy" for action in window.menus.view.actions()) or any(
            action.text().replace("&", "") == "Toy" for menu in window.menus.view.findChildren(type(window.menus.view))
            for action in menu.actions())
        dock.show()
        dock.raise_()
        qtbot.waitUntil(lambda: dock.widget().is_shown(), timeout=5000)
    finally:
        window.close()
