"""The whole window recorded while it steps through decoding, from File ▸ Export: one frame per recorded step,
each the window's size, the attention map's part of the window changing from frame to frame (its map grows a
row per step) and the selection given back; a cancel writes nothing, and a failure is one sentence."""
from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6.QtCore import QPoint

from explorer.app.figures import export_dialogs, window_animation
from explorer.app.figures.animation import AnimationCancelled, read_animation
from explorer.app.figures.window_animation import record_window
from explorer.drawing import export
from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.shared_window import settle, window_with_tiny_model


@pytest.fixture
def window(qapp, tmp_path):
    """The real window with the tiny Llama, its prompt prefilled and three tokens decoded by Step, on a 1920x1080
    screen (the offscreen platform's own is 800 px wide, and a window keeps no size given larger than its screen)."""
    dialogs = {}
    with emulated_screen(SCREENS["1920x1080"]), window_with_tiny_model(qapp, tmp_path / "app", dialogs) as window:
        window.resize(1200, 800)
        for steps in (2, 3, 4):
            window.controller.step()
            settle(qapp, lambda: window.session.trace.n_steps == steps and not window.worker.busy)
        window.session.select(layer=1, head=1)
        window.dialogs = dialogs
        yield window


def record_action(window):
    """File ▸ Export's entry, as the menu shows it (the menu is filled as it opens)."""
    window.menus.export.aboutToShow.emit()
    found = [a for a in window.menus.export.actions() if a.text().replace("&", "").startswith("Record the Window")]
    assert len(found) == 1, [a.text() for a in window.menus.export.actions()]
    return found[0]


def region_of(window, widget) -> tuple[slice, slice]:
    """Rows and columns of `widget` in a grab of `window` (device pixels)."""
    ratio = window.devicePixelRatioF()
    corner = widget.mapTo(window, QPoint(0, 0))
    top, left = int(corner.y() * ratio), int(corner.x() * ratio)
    return slice(top, top + int(widget.height() * ratio)), slice(left, left + int(widget.width() * ratio))


def test_the_menu_records_a_frame_per_step_of_the_whole_window(window, qtbot, tmp_path, monkeypatch):
    target = tmp_path / "window.png"                 # lossless: the frames are the grabs, pixel for pixel
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: target)
    before = window.session.selection
    record_action(window).trigger()                  # records under its progress dialog, then returns
    assert target.exists(), window.dialogs["warnings"]
    frames = read_animation(target)
    trace = window.session.trace
    ratio = window.devicePixelRatioF()
    assert len(frames) == trace.n_steps == 4
    assert frames.shape[1:3] == (round(window.height() * ratio), round(window.width() * ratio))
    attention = window.docks["attention"].widget()
    rows, columns = region_of(window, attention)
    for step in range(1, trace.n_steps):
        assert not np.array_equal(frames[step][rows, columns], frames[step - 1][rows, columns]), \
            f"the attention map did not change at step {step}"
    assert window.session.selection == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".png") == ["window.png"]
    assert window.dialogs["warnings"] == []


def test_an_mp4_of_the_window_has_even_sides_and_a_frame_per_step(window, qtbot, tmp_path):
    window.resize(1001, 701)                         # odd sides: yuv420p needs even ones
    qtbot.waitUntil(lambda: window.width() == 1001 and window.height() == 701, timeout=10_000)
    frames = read_animation(record_window(window, tmp_path / "window.mp4"))
    ratio = window.devicePixelRatioF()
    height, width = round(701 * ratio), round(1001 * ratio)
    assert frames.shape[:3] == (window.session.trace.n_steps, height + height % 2, width + width % 2)


def test_cancel_writes_nothing_and_a_failure_is_one_sentence(window, tmp_path, monkeypatch):
    asked = []
    with pytest.raises(AnimationCancelled):
        record_window(window, tmp_path / "window.gif", cancelled=lambda: asked.append(1) or len(asked) > 2)
    assert list(tmp_path.glob("window*")) == []
    monkeypatch.setattr(window_animation, "SETTLE_S", 0.0)
    window.session.set_busy(True)                    # as during a run that outlasts the wait
    with pytest.raises(export.ExportError, match="the model is running"):
        record_window(window, tmp_path / "window.gif")
    window.session.set_busy(False)
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: tmp_path / "missing" / "window.gif")
    record_action(window).trigger()
    errors = window.dialogs["warnings"]
    assert len(errors) == 1 and "\n" not in errors[0] and "does not exist" in errors[0], errors


def test_the_menu_item_names_the_formats_its_dialog_offers(window, monkeypatch):
    asked = []
    monkeypatch.setattr(export_dialogs, "ask_path", lambda parent, title, name, filters: asked.append(filters))
    action = record_action(window)
    action.trigger()
    named = re.search(r"\(([^)]*)\)", action.text()).group(1).split("/")
    assert asked and named == [suffix.upper() for suffix in re.findall(r"\*\.(\w+)", asked[0])]
