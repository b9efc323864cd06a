"""File ▸ Export Figure Text Size reaches the exported image: the same labels, exported at 1.5× and 2×, are
1.5 and 2 times as tall in the PNG's pixels as at the normal size (measured on the glyphs' ink, as
tests/app/text_contrast.py finds them), and the choice is kept in the settings."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from explorer.app.figures import export_dialogs
from explorer.drawing import export
from tests.app.synthetic_trace import build_trace
from tests.app.text_contrast import GLYPH_DISTANCE, background_of, rendered
from tests.app.trace_window import window_showing

SIZE = (1200, 900)
TOLERANCE = 0.15             # hinting rounds each glyph to whole pixels


@pytest.fixture
def window(qtbot, tmp_path):
    with window_showing(qtbot, tmp_path, build_trace(n_layers=2, n_heads=2, n_kv_heads=1, prompt_len=6,
                                                     steps=1)) as window:
        yield window


def ink_height(image: np.ndarray, rect) -> int:
    """Rows from the top of the highest glyph pixel to the bottom of the lowest inside rect."""
    x, y, w, h = (int(round(v)) for v in rect)
    patch = image[max(0, y): y + h, max(0, x): x + w]
    background = background_of(patch)
    ink = np.abs(patch.astype(int) - background.astype(int)).max(axis=2) > GLYPH_DISTANCE
    rows = np.flatnonzero(ink.any(axis=1))
    return int(rows[-1] - rows[0] + 1) if rows.size else 0


def exported_title_px(window, recorded, monkeypatch, path: Path, choice: str) -> int:
    action = next(a for a in window.menus.figure_text.actions() if a.text().replace("&", "").startswith(choice))
    action.trigger()
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: path)
    monkeypatch.setattr(export_dialogs, "ask_size", lambda parent, default=None: SIZE)
    window.menus.export_focused_panel()                 # Ctrl+E: the attention panel's head map
    assert path.exists()
    title = next(rect for what, rect in recorded[path.name] if what.startswith("title"))
    return ink_height(rendered(path, SIZE), title)


@pytest.mark.parametrize("choice, scale", [("Large", 1.5), ("Largest", 2.0)])
def test_the_chosen_text_size_reaches_the_exported_labels(window, recorded, monkeypatch, tmp_path, choice, scale):
    normal = exported_title_px(window, recorded, monkeypatch, tmp_path / "normal.png", "Normal")
    larger = exported_title_px(window, recorded, monkeypatch, tmp_path / "larger.png", choice)
    assert normal >= 8, f"the normal title's ink is {normal} px tall"
    assert abs(larger / normal - scale) <= TOLERANCE * scale, f"{choice}: {larger} px against {normal} px"
    assert window.settings.figure_text_scale == scale


def test_every_step_exports_at_the_chosen_size(window, recorded, monkeypatch, tmp_path):
    heights = {}
    for choice in ("Normal", "Largest"):
        next(a for a in window.menus.figure_text.actions() if a.text().replace("&", "").startswith(choice)).trigger()
        path = tmp_path / choice / "frame.png"
        path.parent.mkdir()
        monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: path)
        monkeypatch.setattr(export_dialogs, "ask_size", lambda parent, default=None: SIZE)
        export_dialogs.ask_and_export_frames(window.docks["attention"].widget(), window.session.trace, 0, 0)
        first = path.with_name("frame_0000.png")
        title = next(rect for what, rect in recorded[first.name]        # the title, not the caption naming its step
                     if what.startswith("title") and not what.startswith("title step"))
        heights[choice] = ink_height(rendered(first, SIZE), title)
    assert abs(heights["Largest"] / heights["Normal"] - 2.0) <= TOLERANCE * 2.0, heights


def test_an_animation_draws_its_frames_at_the_chosen_size(window, qtbot, monkeypatch, tmp_path):
    """From the Attention panel's menu at 2×: each frame is the static frame written at 2×, not at 1×."""
    from explorer.app.figures.animation import read_animation, read_frame

    next(a for a in window.menus.figure_text.actions() if a.text().replace("&", "").startswith("Largest")).trigger()
    trace, size = window.session.trace, (480, 360)
    selection = window.session.selection
    target = tmp_path / "decoding.png"
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: target)
    monkeypatch.setattr(export_dialogs, "ask_size", lambda *a, **k: size)
    attention = window.docks["attention"].widget()
    next(a for a in attention.make_export_actions() if "animation" in a.text()).trigger()
    qtbot.waitUntil(target.exists, timeout=20000)
    frames = read_animation(target)
    statics = {}
    for scale in (1.0, 2.0):
        folder = tmp_path / f"static{scale}"
        folder.mkdir()
        statics[scale] = [read_frame(p) for p in export.export_frames(
            trace, folder / "frame.png", selection.layer, selection.head, size=size, text_scale=scale)]
    assert len(frames) == len(statics[2.0])
    assert all(np.array_equal(f, s) for f, s in zip(frames, statics[2.0])), "each frame is its 2× static frame"
    assert not np.array_equal(statics[1.0][0], statics[2.0][0])
