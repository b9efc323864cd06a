"""The "?" on a panel's title bar opens that panel's stop on the Learn path: every registered panel a stop
names in resources/learn/stops.json ('panels') has one, on its title bar and clear of Qt's own buttons, and no
other panel has one."""
from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton

from explorer.app.panels import registry
from explorer.app.widgets.learn_tour import load_stops, stop_of_panel
from explorer.core import store
from explorer.core.errors import ExplorerError
from tests.app.screen_fit import settle
from tests.app.shared_window import make_window


def named_in_stops() -> dict[str, str]:
    """{panel: stop id}, read from the JSON itself."""
    data = json.loads((store.resources_dir() / "learn" / "stops.json").read_text(encoding="utf-8"))
    return {panel: stop["id"] for stop in data["stops"] for panel in stop.get("panels", ())}


@pytest.fixture
def window(qtbot, tmp_path):
    window = make_window(qtbot, tmp_path)
    window.resize(1600, 1000)
    settle()
    yield window
    window.close()


def test_the_path_names_most_panels():
    named = named_in_stops()
    registered = {spec.object_name for spec in registry.PANELS}
    assert set(named) <= registered | {"prompt"}, "every panel a stop names exists"
    assert {"tokens", "embeddings", "qkv", "attention", "mask", "kv_cache", "derivation"} <= set(named)


def test_a_question_mark_iff_a_stop_names_the_panel_and_it_opens_that_stop(window, qtbot):
    named = named_in_stops()
    ids = [stop.id for stop in load_stops()]
    registered = ["prompt"] + [spec.object_name for spec in registry.PANELS]
    for name in registered:
        dock = window.docks[name]
        button = dock.findChild(QAbstractButton, "learn_button")
        assert (button is not None) == (name in named), f"{name}: a '?' only where a stop names the panel"
        if button is None:
            continue
        dock.show()
        dock.raise_()
        settle(0.1)
        title_px = dock.widget().geometry().top()
        assert button.isVisible() and button.text() == "?", name
        assert 0 <= button.geometry().top() and button.geometry().bottom() < title_px, f"{name}: on the title bar"
        for qt_button in dock.findChildren(QAbstractButton, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if qt_button is not button and qt_button.isVisible():
                assert not qt_button.geometry().intersects(button.geometry()), f"{name}: clear of Qt's buttons"
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        learn = window.learn_dock.widget()
        assert window.learn_dock.isVisible()
        assert ids[learn.index] == named[name], f"{name}'s '?' opens its stop"


def test_one_stop_per_panel(tmp_path):
    stops = load_stops()
    twice = (stops[0].__class__(**{**stops[0].__dict__, "panels": ("tokens",)}),
             stops[1].__class__(**{**stops[1].__dict__, "panels": ("tokens",)}))
    with pytest.raises(ExplorerError, match="tokens"):
        stop_of_panel(twice)


def test_help_lists_the_question_mark(window):
    from explorer.app.window.panel_tips import shortcut_rows

    assert any("?" in gesture and "Learn" in does for does, gesture in shortcut_rows(window))
