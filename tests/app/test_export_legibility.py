"""Every exported figure is legible: its text has a contrast of at least 4.5 against its background.

Measured over the glyphs of every label (titles, tick values, axis names, colour-bar
numbers; see tests/app/text_contrast.py), in the PNG and in the SVG drawn by
QSvgRenderer, for the figures the window exports (File ▸ Export, Ctrl+E, the panels'
context menus) in the light and the dark app theme, and for the headless `export`
command. Figures are light and print-ready unless the dark figures are chosen.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint

from explorer.app.figures import export_dialogs
from explorer.app.window.theme import apply_theme
from tests.app.synthetic_trace import build_trace
from tests.app.text_contrast import glyph_contrast, label_rects, paper_luminance, rendered
from tests.app.trace_window import window_showing

ROOT = Path(__file__).resolve().parents[2]
WCAG_AA = 4.5
SIZE = (800, 600)
MIN_TEXTS = 3                   # a figure has at least a title and two labelled axes


def assert_legible(path: Path, rects, size=SIZE) -> None:
    image = rendered(path, size)
    plots = [rect for what, rect in rects if what == "plot"]
    measured = [(what, *glyph_contrast(image, rect, plots)) for what, rect in rects if what != "plot"]
    with_text = [(what, ratio) for what, ratio, n in measured if n]
    assert len(with_text) >= MIN_TEXTS, f"{path.name}: text found only in {measured}"
    poor = [(what, round(ratio, 2)) for what, ratio in with_text if ratio < WCAG_AA]
    assert not poor, f"{path.name}: labels below {WCAG_AA}:1 contrast: {poor}"




@pytest.fixture
def window(qtbot, tmp_path):
    with window_showing(qtbot, tmp_path, build_trace(n_layers=3, n_heads=4, n_kv_heads=2, prompt_len=7,
                                                     steps=2)) as window:
        yield window


def answer_dialogs(monkeypatch, path: Path) -> None:
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: path)
    monkeypatch.setattr(export_dialogs, "ask_size", lambda parent, default=None: SIZE)


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_ctrl_e_exports_a_light_legible_attention_map_in_either_theme(window, restore_palette, recorded,
                                                                       monkeypatch, tmp_path, theme, suffix):
    apply_theme(restore_palette, theme, window)
    path = tmp_path / f"attention{suffix}"
    answer_dialogs(monkeypatch, path)
    window.menus.export_focused_panel()                 # Ctrl+E: the attention panel's first export
    assert path.exists(), "Ctrl+E wrote the head's map"
    assert_legible(path, recorded[path.name])
    assert paper_luminance(rendered(path, SIZE)) > 0.85, "exported figures are light, print-ready"


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("action", [1, 2])             # all heads of the layer; the full grid
def test_the_attention_panel_menu_exports_are_legible(window, restore_palette, recorded, monkeypatch, tmp_path,
                                                      theme, action):
    apply_theme(restore_palette, theme, window)
    path = tmp_path / f"figure{action}.png"
    answer_dialogs(monkeypatch, path)
    window.docks["attention"].widget().export_actions()[action].trigger()
    assert_legible(path, recorded[path.name])
    assert paper_luminance(rendered(path, SIZE)) > 0.85


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_the_kv_lab_plot_export_is_legible(window, restore_palette, recorded, monkeypatch, tmp_path, theme, suffix):
    apply_theme(restore_palette, theme, window)
    window.docks["kv_lab"].raise_()
    panel = window.docks["kv_lab"].widget()
    path = tmp_path / f"kv_lab{suffix}"
    answer_dialogs(monkeypatch, path)
    next(a for a in panel.export_actions() if "plot" in a.text()).trigger()
    assert path.exists()
    assert_legible(path, recorded[path.name], size=(1000, 700))
    assert paper_luminance(rendered(path, (1000, 700))) > 0.85


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_a_panel_saved_as_it_looks_is_legible(window, restore_palette, qtbot, monkeypatch, tmp_path, theme, suffix):
    apply_theme(restore_palette, theme, window)
    dock = window.docks["kv_cache"]
    dock.raise_()
    qtbot.waitUntil(lambda: dock.built, timeout=10000)             # its plots are built and drawn a piece a turn
    panel = dock.widget()
    qtbot.waitUntil(lambda: panel.is_shown() and not panel.drawing, timeout=10000)
    path = tmp_path / f"kv_cache{suffix}"
    answer_dialogs(monkeypatch, path)
    panel.export_actions()[0].trigger()
    assert path.exists()
    rects = [("header", [panel.header.x(), panel.header.y(), panel.header.width(), panel.header.height()])]
    for view in panel.findChildren(type(panel.plots)):
        if view.isVisible():
            offset = view.mapTo(panel, QPoint(0, 0))
            rects += [(what, [x + offset.x(), y + offset.y(), w, h]) for what, (x, y, w, h) in label_rects(view)]
    assert_legible(path, rects, size=(panel.width(), panel.height()))
    assert paper_luminance(rendered(path, (panel.width(), panel.height()))) > 0.85, "light, as every export"
    lightness = panel.grab().toImage().pixelColor(2, 2).lightness()
    assert lightness > 200 if theme == "light" else lightness < 100, "on screen the panel keeps the app's theme"


def test_dark_figures_are_an_option(window, restore_palette, recorded, monkeypatch, tmp_path):
    apply_theme(restore_palette, "light", window)
    window.menus.dark_figures.setChecked(True)
    try:
        path = tmp_path / "dark.png"
        answer_dialogs(monkeypatch, path)
        window.menus.export_focused_panel()
        assert_legible(path, recorded[path.name])
        assert paper_luminance(rendered(path, SIZE)) < 0.05, "the dark option draws on a dark background"
    finally:
        window.menus.dark_figures.setChecked(False)


@pytest.mark.parametrize("options", [[], ["--dark"]], ids=["light", "dark"])
def test_the_headless_export_command_writes_legible_figures(tmp_path, options):
    result = subprocess.run([sys.executable, "-m", "tests.app.headless_export_probe", str(tmp_path), *options],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    rects = json.loads((tmp_path / "rects.json").read_text())
    for suffix in (".png", ".svg"):
        path = tmp_path / f"attention{suffix}"
        assert_legible(path, rects[suffix])
        paper = paper_luminance(rendered(path, SIZE))
        assert paper < 0.05 if options else paper > 0.85, f"{path.name}: background luminance {paper:.2f}"
