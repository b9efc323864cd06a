"""File ▸ Export ▸ Record the Window While Stepping, frame by frame against the window itself (drive 19, M4).

- Each frame is the window as it stands once every visible panel has drawn the frame's step: the frame of step k
  equals, pixel for pixel in each panel's region, a grab of the window taken after selecting step k and waiting
  until no panel draws any more (wait_drawn). A frame grabbed while a panel was still drawing (in turns) or
  still showed the step before differs from it.
- Its save dialog proposes a name whose suffix is the one of the filter it selects (it proposed "window.mp4"
  under "Animated GIF (*.gif)"), as every animation export's dialog does.
"""
from __future__ import annotations

import re
import time

import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QFileDialog

from explorer.app.figures import animation, export_dialogs, kv_animation, live_recording, window_animation
from explorer.app.figures.animation import read_animation
from explorer.app.panels.base import Panel
from tests.app.shared_window import window_three_steps_on
from tests.app.test_window_animation import region_of


def wait_drawn(window, seconds: float = 30.0) -> None:
    """Until no panel draws in turns and the model thread is idle for a while, then a little longer for queued
    layouts (tests/app/test_kv_clipping.py's wait_drawn, with the model thread's answers)."""
    app, deadline = QApplication.instance(), time.monotonic() + seconds
    quiet = 0
    while quiet < 10:
        app.processEvents()
        busy = window.worker.busy or any(panel.drawing for panel in window.findChildren(Panel))
        quiet = 0 if busy else quiet + 1
        assert time.monotonic() < deadline, "a panel kept drawing"
        time.sleep(0.02)
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


@pytest.fixture
def window(qapp, tmp_path):
    """The real window with the tiny Llama, its prompt prefilled and three tokens decoded, on 1920x1080."""
    with window_three_steps_on(qapp, tmp_path / "app") as window:
        window.prompt.setFocus()
        window.prompt.clearFocus()          # no blinking text cursor in any grab
        wait_drawn(window)
        yield window


def pixels(image: QImage) -> np.ndarray:
    """(H, W, 3) RGB of `image`, as read_animation gives a frame."""
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    # a copy: the view reads the converted image's memory, freed with it once this returns (and then reused: a
    # row of 14 px read as another allocation's bytes)
    return rows[:, : image.width() * 3].reshape(image.height(), image.width(), 3).copy()


def shown_panels(window) -> list[Panel]:
    return [panel for panel in window.findChildren(Panel) if panel.is_shown() and panel.width() > 0]


def drawing_in_turns(panel: Panel, parts: int):
    """A drawing of `parts` parts, run a part a turn (Panel.draw_in_parts), as a panel draws a long trace on a
    raise: the panel says "Drawing…" until its last part ran."""
    def drawing():
        yield from range(parts)

    def each_selection(_selection) -> None:
        panel.draw_in_parts(drawing(), in_turns=True)
    return each_selection


@pytest.mark.parametrize("parts, focus", [(0, False), (12, False), (0, True)],
                         ids=["at once", "a panel drawing in turns", "a field holding the focus"])
def test_each_frame_is_the_window_once_every_panel_drew_its_step(window, qtbot, tmp_path, parts, focus):
    """With a field of the window holding the focus (attention's layer box, where the window's activation put it in
    CI runs), its caret blinked in and out of the frames: frame 0 differed from the settled window in its 14 px.
    The settled grabs below are taken with the caret held steady, and the recording gives the blinking back."""
    attention = window.docks["attention"].widget()
    if parts:
        window.session.selection_changed.connect(drawing_in_turns(attention, parts))
    if focus:
        window.activateWindow()
        attention.layer_box.setFocus()
        qtbot.waitUntil(attention.layer_box.hasFocus, timeout=5000)
    app = QApplication.instance()
    flash = app.cursorFlashTime()
    frames = read_animation(window_animation.record_window(window, tmp_path / "window.png"))   # lossless
    assert app.cursorFlashTime() == flash, "the caret's blinking was not given back"
    trace = window.session.trace
    assert len(frames) == trace.n_steps
    panels = shown_panels(window)
    assert attention in panels
    app.setCursorFlashTime(0)                # a steady caret, as each frame was grabbed with
    try:
        compare_steps(window, frames, panels)
    finally:
        app.setCursorFlashTime(flash)


def compare_steps(window, frames, panels) -> None:
    """Each frame against the window settled at its step, panel by panel."""
    trace = window.session.trace
    for step in range(trace.n_steps):
        window.session.select(step=None if step == trace.n_steps - 1 else step)
        wait_drawn(window)
        settled = pixels(window.grab().toImage())
        assert settled.shape == frames[step].shape
        for panel in panels:
            rows, columns = region_of(window, panel)
            differ = np.any(frames[step][rows, columns] != settled[rows, columns], axis=-1)
            assert not differ.any(), (f"frame {step}: {panel.title} differs from the window settled at step "
                                      f"{step} in {int(differ.sum())} pixels" + where_they_differ(
                                          window, panel, differ, frames[step][rows, columns]))


def where_they_differ(window, panel: Panel, differ: np.ndarray, frame: np.ndarray) -> str:
    """Where in `panel` the differing pixels lie, the widget there and the focus: what a failure in another
    machine's run (which keeps no image) needs to be told apart (a text cursor, an axis, a label)."""
    ys, xs = np.nonzero(differ)
    top, left, bottom, right = int(ys.min()), int(xs.min()), int(ys.max()), int(xs.max())
    ratio = window.devicePixelRatioF()
    centre = panel.childAt(int((left + right) / 2 / ratio), int((top + bottom) / 2 / ratio))
    chain = []
    while centre is not None and centre is not panel and len(chain) < 4:
        chain.append(type(centre).__name__)
        centre = centre.parentWidget()
    colours = sorted({tuple(int(c) for c in frame[y, x]) for y, x in zip(ys[:50], xs[:50])})[:6]
    focus = QApplication.focusWidget()
    return (f" at x {left}-{right}, y {top}-{bottom} of the panel ({panel.width()}x{panel.height()}), over "
            f"{' in '.join(chain)}; the frame's colours there {colours}; the focus in "
            f"{type(focus).__name__ if focus else None}")


def capture_dialog(monkeypatch) -> list[tuple[str, str, str]]:
    """QFileDialog.getSaveFileName replaced by one that records (proposed path, filters, selected filter) and
    answers Cancel."""
    given = []

    def fake(parent, title, directory, filters, selected="", *args, **kwargs):
        selected = kwargs.get("selectedFilter", selected)
        given.append((directory, filters, selected or filters.split(";;")[0]))    # Qt's default: the first
        return "", ""
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake))
    return given


def suffixes_of(filter_: str) -> list[str]:
    return [s.lower() for s in re.findall(r"\*(\.\w+)", filter_)]


@pytest.mark.parametrize("name", ["window.mp4", "kv_cache.gif", "recording.png", "table.csv"])
def test_the_dialog_selects_the_filter_of_the_proposed_name(qapp, monkeypatch, tmp_path, name):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path))
    given = capture_dialog(monkeypatch)
    filters = animation.ANIMATION_FILTERS if not name.endswith(".csv") else "NumPy (*.npy);;CSV (*.csv)"
    assert export_dialogs.ask_path(None, "Save", name, filters) is None
    (directory, offered, selected), = given
    assert selected in offered.split(";;"), (selected, offered)
    assert re.search(r"\.\w+$", directory).group(0).lower() in suffixes_of(selected), (directory, selected)


def test_every_animation_export_proposes_a_name_its_selected_filter_takes(window, monkeypatch):
    given = capture_dialog(monkeypatch)
    trace, selection = window.session.trace, window.session.selection
    window_animation.ask_and_record_window(window)
    animation.ask_and_export_animation(window, trace, selection.layer, selection.head)
    kv_animation.ask_and_export_kv_animation(window, trace)
    live_recording.ask_and_start(window)
    assert len(given) == 4, given
    for directory, offered, selected in given:
        assert selected in offered.split(";;"), (selected, offered)
        assert re.search(r"\.\w+$", directory).group(0).lower() in suffixes_of(selected), (directory, selected)


def test_a_name_chosen_without_a_suffix_gets_the_chosen_filters(qapp, monkeypatch, tmp_path):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path))
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(tmp_path / "kv_lab_tiny"), "CSV (*.csv)")))
    assert export_dialogs.ask_path(None, "Save", "kv_lab_tiny", "CSV (*.csv)") == tmp_path / "kv_lab_tiny.csv"
