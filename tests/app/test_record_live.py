"""The window recorded live from File ▸ Export: once started, each step the person takes is one frame of the
window as drawn (the window's grab size), the status bar says "● Recording" with the count, Stop and Save
writes a file imageio reads back with a frame per step, and Cancel writes nothing and leaves no frames."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint
from PySide6.QtGui import QImage

from explorer.app.figures import export_dialogs
from explorer.app.figures.animation import read_animation
from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.shared_window import settle, window_with_tiny_model


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    """The real window with the tiny Llama, its prompt prefilled, on a 1920x1080 screen (the offscreen platform's
    own is 800 px wide, and a window keeps no size given larger than its screen)."""
    dialogs = {}
    with emulated_screen(SCREENS["1920x1080"]), \
            window_with_tiny_model(qapp, tmp_path_factory.mktemp("app"), dialogs) as window:
        window.resize(1400, 900)          # beyond the docks' minimum widths, which change as a step is drawn
        window.dialogs = dialogs
        yield window


def export_action(window, starts: str):
    """File ▸ Export's entry whose text starts with `starts`, as the menu shows it when opened."""
    window.menus.export.aboutToShow.emit()
    found = [a for a in window.menus.export.actions() if a.text().replace("&", "").startswith(starts)]
    assert len(found) == 1, [a.text() for a in window.menus.export.actions()]
    return found[0]


def step(qapp, window, recording) -> None:
    """Decode ▸ Step, then wait for the step to be shown and its frame taken."""
    steps, frames = window.session.trace.n_steps, len(recording.frames)
    window.controller.step()
    settle(qapp, lambda: window.session.trace.n_steps == steps + 1 and not window.worker.busy
           and len(recording.frames) == frames + 1)


def start(window, monkeypatch, target):
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: target)
    export_action(window, "Start Recording the Window Live").trigger()
    recording = window.menus.recording
    assert recording is not None and recording.indicator.isVisible()
    assert recording.indicator.label.text().startswith("● Recording")
    return recording


@pytest.mark.parametrize("suffix", [".png", ".gif", ".mp4"])
def test_each_step_taken_while_recording_is_one_frame_of_the_window(qapp, window, tmp_path, monkeypatch, suffix):
    target = tmp_path / f"live{suffix}"
    recording = start(window, monkeypatch, target)
    assert recording.frames == []                              # the step already shown is not a new one
    grabs = []
    for _ in range(3):
        step(qapp, window, recording)
        grabs.append(window.grab().toImage().size())
    assert recording.indicator.label.text() == "● Recording: 3 frames"
    on_screen = grab_of(window)
    export_action(window, "■ Stop Recording and Save").trigger()
    assert window.menus.recording is None and window.dialogs["warnings"] == []
    frames = read_animation(target)
    assert len(frames) == 3
    assert all(frames.shape[1:3] == (size.height(), size.width()) for size in grabs), (frames.shape, grabs)
    assert window.size().width() == 1400
    rows, columns = region_of(window, window.statusBar())
    red = np.array([0xD9, 0x30, 0x25])      # the indicator's red: in the status bar on screen, not in the recording
    assert (np.abs(on_screen[rows, columns] - red).max(axis=-1) <= 30).sum() > 20
    assert all((np.abs(frame[rows, columns].astype(int) - red).max(axis=-1) <= 30).sum() == 0 for frame in frames)
    attention = window.docks["attention"].widget()
    assert not np.array_equal(frames[0], frames[-1]), "the window did not change from step to step"
    assert attention.isVisible()
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]          # no temporary file left
    assert export_action(window, "Start Recording the Window Live")               # ready to record again


def test_cancel_writes_nothing_and_removes_the_frames(qapp, window, tmp_path, monkeypatch):
    target = tmp_path / "cancelled.gif"
    recording = start(window, monkeypatch, target)
    step(qapp, window, recording)
    scratch = recording.frames[0].parent
    assert scratch.exists()
    recording.indicator.cancel_button.click()
    assert window.menus.recording is None
    assert not scratch.exists() and list(tmp_path.iterdir()) == []
    assert all(not w.isVisible() for w in window.statusBar().findChildren(type(recording.indicator)))


def test_stop_without_a_step_and_a_bad_name_each_say_why(qapp, window, tmp_path, monkeypatch):
    recording = start(window, monkeypatch, tmp_path / "empty.mp4")
    recording.indicator.stop_button.click()
    assert window.menus.recording is None and list(tmp_path.iterdir()) == []
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: tmp_path / "recording.avi")
    export_action(window, "Start Recording the Window Live").trigger()
    assert window.menus.recording is None
    errors, window.dialogs["warnings"][:] = list(window.dialogs["warnings"]), []
    assert len(errors) == 2 and all("\n" not in e for e in errors), errors
    assert "Nothing was recorded" in errors[0] and "must end in .gif, .png or .mp4" in errors[1], errors


def test_the_steps_play_takes_are_recorded_each_once_drawn(qapp, window, tmp_path, monkeypatch):
    target = tmp_path / "played.png"
    recording = start(window, monkeypatch, target)
    first = window.session.trace.n_steps
    window.controller.set_playing(True, tokens_per_second=50)
    settle(qapp, lambda: len(recording.frames) >= 4)
    window.controller.set_playing(False)
    settle(qapp, lambda: not window.worker.busy and not recording.pending)
    taken = window.session.trace.n_steps - first
    assert len(recording.frames) == taken >= 4
    export_action(window, "■ Stop Recording and Save").trigger()
    frames = read_animation(target)
    assert len(frames) == taken
    rows, columns = region_of(window, window.docks["attention"].widget())
    for index in range(1, taken):                  # each frame is its own step: the map has grown a row
        assert not np.array_equal(frames[index][rows, columns], frames[index - 1][rows, columns]), index


def grab_of(window) -> np.ndarray:
    """The window as it is on screen, (H, W, 3) int RGB."""
    image = window.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
    return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
        image.height(), image.width(), 3).astype(int)


def region_of(window, widget) -> tuple[slice, slice]:
    """Rows and columns of `widget` in a grab of `window` (device pixels)."""
    ratio = window.devicePixelRatioF()
    corner = widget.mapTo(window, QPoint(0, 0))
    top, left = int(corner.y() * ratio), int(corner.x() * ratio)
    return slice(top, top + int(widget.height() * ratio)), slice(left, left + int(widget.width() * ratio))


def test_a_window_resized_while_recording_keeps_the_first_frames_size_and_the_menu_cancels(
        qapp, qtbot, window, tmp_path, monkeypatch):
    target = tmp_path / "resized.png"
    recording = start(window, monkeypatch, target)
    step(qapp, window, recording)
    first = window.grab().toImage().size()
    window.resize(1500, 950)
    qtbot.waitUntil(lambda: window.width() == 1500, timeout=10_000)
    step(qapp, window, recording)
    export_action(window, "■ Stop Recording and Save").trigger()
    frames = read_animation(target)
    assert frames.shape[:3] == (2, first.height(), first.width())
    window.resize(1400, 900)
    qtbot.waitUntil(lambda: window.width() == 1400, timeout=10_000)
    recording = start(window, monkeypatch, tmp_path / "dropped.gif")
    step(qapp, window, recording)
    export_action(window, "Cancel the Recording").trigger()
    assert window.menus.recording is None and sorted(p.name for p in tmp_path.iterdir()) == ["resized.png"]


def test_a_recording_deleted_with_its_window_leaves_no_frames(qapp, tmp_path, monkeypatch):
    """The recording is a child of the window: Qt deletes it with the window, and its frames go with it."""
    from PySide6.QtCore import QCoreApplication, QEvent

    with window_with_tiny_model(qapp, tmp_path / "own", {}) as own:
        recording = start(own, monkeypatch, tmp_path / "never.gif")
        step(qapp, own, recording)
        scratch = recording.frames[0].parent
        assert recording.parent() is own and scratch.exists()
        recording.deleteLater()                       # as the window's deletion deletes its children
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        assert not scratch.exists()
    assert not (tmp_path / "never.gif").exists()
