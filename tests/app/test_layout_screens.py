"""The window on the screens people have: 1366x768, 1600x1000 and 1920x1080.

Each size runs in a fresh interpreter whose offscreen screen really has that size
(Qt's offscreen platform reads its screens from a JSON file), through
tests/app/layout_probe.py. What is checked is what a person sees: the first window
fits the screen and uses it, nothing lies off-screen, raising any tab keeps the
window on the screen, every visible plot has a ViewBox at least MIN_PLOT_PX wide
and high on every tab, the prompt is a few lines high, the next-token table shows
several candidates, and all of it again after a restart with the saved layout.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENS = [(1366, 768), (1600, 1000), (1920, 1080)]
MIN_PLOT_PX = 120            # the bar: a plot smaller than this is a strip of ticks
MIN_CANDIDATES = 4           # next-token rows a person sees without scrolling
PROMPT_LINES = 6             # the prompt box is a few lines, not a third of the screen
USED_SHARE = 0.9             # the first window takes most of the screen


@pytest.fixture(scope="module", params=SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def probe(request, tmp_path_factory):
    width, height = request.param
    folder = tmp_path_factory.mktemp(f"screen{width}x{height}")
    config = folder / "screen.json"
    config.write_text(json.dumps({"screens": [{"name": "probe", "x": 0, "y": 0, "width": width, "height": height,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    out = folder / "probe.json"
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={config}")
    result = subprocess.run([sys.executable, "-m", "tests.app.layout_probe", f"{width}x{height}",
                             str(folder / "settings.ini"), str(out)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["available"] == [0, 0, width, height], "the emulated screen is the one asked for"
    return data


def inside(rect, available) -> bool:
    x, y, w, h = rect
    ax, ay, aw, ah = available
    return x >= ax and y >= ay and x + w <= ax + aw and y + h <= ay + ah


def test_the_first_window_fits_the_screen_and_uses_it(probe):
    first = probe["shots"][0]
    x, y, w, h = first["frame"]
    _, _, aw, ah = probe["available"]
    assert inside(first["frame"], probe["available"]), f"window {first['frame']} on a {probe['size']} screen"
    assert w >= USED_SHARE * aw and h >= USED_SHARE * ah, f"window {w}x{h} leaves the {aw}x{ah} screen unused"


def test_no_tab_moves_the_window_or_a_widget_off_the_screen(probe):
    for shot in probe["shots"]:
        assert inside(shot["frame"], probe["available"]), f"{shot['label']}: window {shot['frame']}"
        for name, rect in shot["widgets"].items():
            assert inside(rect, probe["available"]), f"{shot['label']}: {name} at {rect} is off-screen"


def test_the_window_asks_no_more_than_the_screen_after_a_reset_and_an_error(probe):
    _, _, aw, ah = probe["available"]
    labels = [shot["label"] for shot in probe["shots"]]
    assert "first run: Reset Layout" in labels and "first run: a long error" in labels
    for shot in probe["shots"]:
        for name, (w, h) in shot["asked"].items():
            assert w <= aw and h <= ah, f"{shot['label']}: {name} {w}x{h} on a {probe['size']} screen"


def test_every_visible_plot_is_legible_on_every_tab_and_after_a_restart(probe):
    small = [f"{shot['label']}: {box['dock']} '{box['plot']}' {box['width']}x{box['height']}"
             for shot in probe["shots"] for box in shot["plots"]
             if min(box["width"], box["height"]) < MIN_PLOT_PX]
    assert not small, "plots smaller than 120 px:\n" + "\n".join(small)
    for run in ("first run", "restart"):
        seen = {box["dock"] for shot in probe["shots"] if shot["label"].startswith(run) for box in shot["plots"]}
        assert {"attention", "embeddings", "qkv", "mask", "kv_cache", "kv_lab"} <= seen, f"{run}: plots of {seen}"


def test_the_prompt_is_a_few_lines_and_the_candidates_are_several(probe):
    for shot in probe["shots"]:
        assert shot["prompt_height"] <= PROMPT_LINES * shot["line_height"] + 40, \
            f"{shot['label']}: the prompt box is {shot['prompt_height']} px high"
        candidates = [t for t in shot["tables"] if t["dock"] == "next_token"]
        assert candidates, f"{shot['label']}: no next-token table in sight"
        assert all(t["rows_shown"] >= MIN_CANDIDATES for t in candidates), f"{shot['label']}: {candidates}"


def test_view_reset_layout_puts_every_dock_back(qtbot, tmp_path):
    from PySide6.QtCore import Qt

    from explorer.app.window import dock_layout
    from tests.app.shared_window import make_window

    window = make_window(qtbot, tmp_path)
    try:
        window.docks["kv_cache"].setFloating(True)
        window.docks["tokens"].hide()
        window.removeDockWidget(window.docks["attention"])
        window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, window.docks["attention"])
        reset = next(a for a in window.menus.view.actions() if a.text().replace("&", "") == "Reset Layout")
        reset.trigger()                   # the menu passes its checked flag; it must not be taken for docks
        qtbot.wait(50)
        # attention over the bottom tabs, or (a short screen) with them behind it
        stacked = window.dockWidgetArea(window.docks["embeddings"]) == dock_layout.AREAS["bottom"]
        for name, dock in window.docks.items():
            assert not dock.isFloating() and dock.isVisibleTo(window), name
            expected = dock_layout.AREAS[dock_layout.area_of(name, stacked)]
            assert window.dockWidgetArea(dock) == expected, name
    finally:
        window.close()
