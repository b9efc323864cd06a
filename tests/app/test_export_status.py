"""What an export from the window says: the status bar names the file written and, for a picture, its size in
pixels as the file itself holds it; a failed save is one line in the window's one error component, naming the
file and what went wrong, never a traceback, and the window keeps its size. An animation's progress is the app's
SteadyProgress dialog.

Before, a successful export said nothing at all, and a write that failed outside core.files (an OSError) escaped
as a traceback."""
from __future__ import annotations

import errno
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from explorer.app.figures import animation, export_dialogs
from explorer.app.widgets.long_export import LongExport
from explorer.app.widgets.steady_progress import SteadyProgress
from explorer.drawing import export
from explorer.views.long_maps import ReducedMaps
from tests.app.test_stale_switch import BUNDLED
from tests.app.window_helpers import new_window, opened, step

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

SIZE = (640, 480)


@pytest.fixture
def gqa(qtbot, tmp_path, dialogs, monkeypatch):
    """The window on the bundled GQA model with a trace, its Attention panel, and the save dialogs answered
    with `SIZE` and the path `target["path"]`."""
    window = new_window(qtbot, tmp_path)
    opened(qtbot, window, BUNDLED / "shakespeare-gqa")
    target = {}
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a: target["path"])
    monkeypatch.setattr(export_dialogs, "ask_size", lambda *a: SIZE)
    yield window, window.docks["attention"].widget(), target
    window.close()


def trigger(panel, starts: str) -> None:
    next(a for a in panel.export_actions() if a.text().startswith(starts)).trigger()


def svg_size(path: Path) -> tuple[int, int]:
    root = ET.parse(path).getroot()
    return int(root.get("width")), int(root.get("height"))


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_a_saved_picture_is_named_with_its_pixel_size_in_the_status_bar(gqa, tmp_path, suffix):
    window, panel, target = gqa
    target["path"] = tmp_path / f"head{suffix}"
    trigger(panel, "Export this head")
    assert target["path"].is_file()
    width, height = QImage(str(target["path"])).size().toTuple() if suffix == ".png" else svg_size(target["path"])
    assert (width, height) == SIZE
    assert window.status.currentMessage() == f"Saved head{suffix} ({width}×{height} px)"
    assert not window.status.error_line.isVisible()
    check_room_for_the_notice(window)


def check_room_for_the_notice(window) -> None:
    """The notice is drawn left of the first field shown: it needs its text's width there."""
    status = window.status
    QApplication.processEvents()
    first = min(field.geometry().left() for field in status.fields.values() if field.isVisible())
    assert first >= status.fontMetrics().horizontalAdvance(status.currentMessage()), (first, status.width())


def test_a_saved_matrix_and_numbered_frames_are_named(gqa, tmp_path):
    window, panel, target = gqa
    target["path"] = tmp_path / "matrix.csv"
    trigger(panel, "Export the raw matrix")
    assert target["path"].is_file()
    assert window.status.currentMessage().startswith("Saved matrix.csv (")
    target["path"] = tmp_path / "frame.png"
    trigger(panel, "Export every step as numbered frames")
    frames = sorted(tmp_path.glob("frame_*.png"))
    assert len(frames) == window.session.trace.n_steps >= 1
    width, height = QImage(str(frames[-1])).size().toTuple()
    names = frames[0].name if len(frames) == 1 else f"{len(frames)} frames, {frames[0].name} … {frames[-1].name}"
    assert window.status.currentMessage() == f"Saved {names} ({width}×{height} px)"


def test_an_animation_shows_its_progress_in_the_apps_dialog_and_says_what_it_saved(qtbot, gqa, tmp_path,
                                                                                     monkeypatch):
    window, panel, target = gqa
    target["path"] = tmp_path / "decoding.gif"
    step(qtbot, window, 2)                          # three frames: the prompt and two steps
    seen = []
    draw = export.export_attention

    def drawing(*args, **options):                # the progress dialogs that stand while each frame is drawn
        seen.append([(d.maximum(), d.value()) for d in panel.findChildren(SteadyProgress)])
        return draw(*args, **options)

    monkeypatch.setattr(export, "export_attention", drawing)
    trigger(panel, "Export every step as an animation")
    frames = window.session.trace.n_steps
    assert frames == 3
    assert len(seen) == frames and all(len(dialogs) == 1 for dialogs in seen), seen
    assert [dialogs[0] for dialogs in seen] == [(frames, done) for done in range(frames)]
    height, width = animation.read_animation(target["path"]).shape[1:3]
    assert window.status.currentMessage() == f"Saved decoding.gif ({width}×{height} px)"
    assert not any(d.isVisible() for d in panel.findChildren(SteadyProgress))     # closed once the file is written


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def check_one_line_error(window, dialogs, name: str, why: str, size_before) -> None:
    QApplication.processEvents()
    line = window.status.error_line
    assert line.isVisible()
    assert name in line.message and why in line.message.lower(), line.message
    assert "\n" not in line.message and "Traceback" not in line.message
    assert dialogs["warnings"] and name in dialogs["warnings"][-1]
    assert window.status.currentMessage() == ""        # no notice drawn across the error line
    # room for its first words beside the model's fields, elided (at 796 px they had left it 0 px wide)
    assert line.line.width() >= line.line.fontMetrics().horizontalAdvance(line.message[:20])
    assert line.geometry().right() <= min(field.geometry().left() for field in window.status.fields.values()
                                          if field.isVisible())
    assert window.size().toTuple() == size_before          # the error line takes its room, not the text's
    assert window.minimumSizeHint().height() <= window.height()


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_a_full_disk_is_one_line_naming_the_file_and_the_window_keeps_its_size(gqa, tmp_path, dialogs, monkeypatch,
                                                                              suffix):
    window, panel, target = gqa
    target["path"] = tmp_path / f"first{suffix}"
    trigger(panel, "Export this head")
    assert window.status.currentMessage().startswith(f"Saved first{suffix}")
    target["path"] = tmp_path / f"head{suffix}"
    size_before = window.size().toTuple()
    monkeypatch.setattr(Path, "write_bytes", full_disk)
    monkeypatch.setattr(Path, "write_text", full_disk)
    trigger(panel, "Export this head")
    assert not target["path"].exists() and not list(tmp_path.glob(".head*"))     # nothing half-written left
    check_one_line_error(window, dialogs, f"head{suffix}", "the disk is full", size_before)


def test_a_folder_that_cannot_hold_the_file_is_one_line(gqa, tmp_path, dialogs):
    window, panel, target = gqa
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    target["path"] = tmp_path / "notes.txt" / "head.png"
    size_before = window.size().toTuple()
    trigger(panel, "Export this head")
    check_one_line_error(window, dialogs, "head.png", "not a folder", size_before)


def test_an_oserror_outside_the_atomic_write_is_one_line_not_a_traceback(gqa, dialogs):
    window, panel, _ = gqa
    size_before = window.size().toTuple()

    def refused():
        raise PermissionError(errno.EACCES, "Permission denied", "/media/slides/head.png")

    assert export_dialogs.run_reporting(panel, refused) is None
    check_one_line_error(window, dialogs, "/media/slides/head.png", "permission denied", size_before)


def test_an_export_off_the_gui_thread_says_what_it_saved(qtbot, gqa, tmp_path):
    """The long-trace export (LongExport, its picture computed on a background thread) says it as well."""
    window, panel, _ = gqa
    job = LongExport(ReducedMaps(), parent=panel)
    path = tmp_path / "long.png"
    job.start(window.session.trace, path, 0, 1, size=SIZE)
    qtbot.waitUntil(lambda: path.is_file() and not job.running, timeout=30000)
    width, height = QImage(str(path)).size().toTuple()
    qtbot.waitUntil(lambda: window.status.currentMessage() == f"Saved long.png ({width}×{height} px)", timeout=5000)
