"""write_atomic: the target is the old file or the new one, whole; no temporary file outlives a failure;
the mode is what the umask says; a full disk or a read-only folder is named as such."""
import errno
import os
import stat

import pytest

from explorer.core import files
from explorer.core.errors import ExplorerError


def _writer_that_fails(error):
    def write(temporary):
        with open(temporary, "wb") as out:
            out.write(b"half of the new")
        raise error
    return write


def _leftovers(folder, keep):
    return sorted(p.name for p in folder.iterdir() if p.name != keep)


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, error):
    target = tmp_path / "trace.npz"
    target.write_bytes(b"the previous file")
    with pytest.raises(type(error) if isinstance(error, KeyboardInterrupt) else ExplorerError):
        files.write_atomic(target, _writer_that_fails(error))
    assert target.read_bytes() == b"the previous file"
    assert _leftovers(tmp_path, "trace.npz") == []


def test_a_full_disk_is_named_as_such_with_the_file(tmp_path):
    target = tmp_path / "out.png"
    with pytest.raises(ExplorerError) as raised:
        files.write_atomic(target, _writer_that_fails(OSError(errno.ENOSPC, "No space left on device")))
    message = str(raised.value)
    assert "disk is full" in message and str(target) in message and message.count(".") >= 1
    assert "\n" not in message


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_the_written_file_has_the_mode_the_umask_says(tmp_path, mask):
    old = os.umask(mask)
    try:
        written = files.write_text_atomic(tmp_path / "session.json", "{}")
        reference = tmp_path / "reference"
        reference.write_text("{}")              # what open() gives a new file under the same umask
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.stat().st_mode) == stat.S_IMODE(reference.stat().st_mode) == 0o666 & ~mask


@pytest.mark.parametrize("code, words", [(errno.EROFS, "read-only"), (errno.EACCES, "permission denied")])
def test_a_folder_that_cannot_take_a_file_is_named_as_such(tmp_path, monkeypatch, code, words):
    """(Simulated: the suite may run as root, which writes into read-only folders.)"""
    def refuse(*_args, **_kwargs):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(files.tempfile, "mkstemp", refuse)
    with pytest.raises(ExplorerError, match=words) as raised:
        files.write_text_atomic(tmp_path / "a.json", "{}")
    assert str(tmp_path / "a.json") in str(raised.value)


def test_a_lone_surrogate_is_refused_and_leaves_no_temporary(tmp_path):
    with pytest.raises(ExplorerError, match="not valid Unicode"):
        files.write_text_atomic(tmp_path / "s.json", "a\udc80b")
    assert list(tmp_path.iterdir()) == []


def test_the_temporary_file_ends_in_the_target_suffix_and_lives_beside_it(tmp_path):
    seen = []
    files.write_atomic(tmp_path / "map.npy", lambda temporary: (seen.append(temporary), open(temporary, "wb").close()))
    assert os.path.dirname(seen[0]) == str(tmp_path) and seen[0].endswith(".npy")


def test_a_writer_that_only_says_it_failed_on_a_full_disk_is_reported_as_a_full_disk(tmp_path, monkeypatch):
    """Qt's image writer returns False on ENOSPC; the export raises a plain OSError with its own words."""
    class NoSpace:
        f_bavail, f_frsize = 0, 4096
    monkeypatch.setattr(files.os, "statvfs", lambda _folder: NoSpace())
    with pytest.raises(ExplorerError, match="disk is full"):
        files.write_atomic(tmp_path / "map.png", _writer_that_fails(OSError("Qt could not encode a 900×900 PNG")))
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_or_device_target_is_refused_and_left_alone(tmp_path):
    fifo = tmp_path / "out.npz"
    os.mkfifo(fifo)
    with pytest.raises(ExplorerError, match="not a regular file"):
        files.write_text_atomic(fifo, "x")
    assert stat.S_ISFIFO(fifo.stat().st_mode) and os.listdir(tmp_path) == ["out.npz"]
    with pytest.raises(ExplorerError, match="not a regular file"):
        files.write_text_atomic(os.devnull, "x")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_symlinked_target_is_written_through_and_the_link_stays(tmp_path):
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    files.write_text_atomic(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"


def test_a_read_only_file_is_never_replaced_even_by_root(tmp_path):
    """Root may write any file: a read-only one was replaced, its mode changed 0444 -> 0644, as the suite's own user
    and CI's are root (boundary27). Its mode is read as well as access()."""
    target = tmp_path / "kept.npz"
    target.write_bytes(b"the person's own")
    target.chmod(0o444)
    with pytest.raises(ExplorerError, match="read-only"):
        files.write_atomic(target, lambda temporary: open(temporary, "wb").close())
    assert target.read_bytes() == b"the person's own" and stat.S_IMODE(target.stat().st_mode) == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.npz"]           # no temporary left


def test_a_folder_is_written_whole_or_not_at_all(tmp_path):
    """files.write_folder: a writer that fails half-way (a full disk under safetensors) leaves no folder and no
    temporary, where a config.json without weights was left that looked like a model (boundary27); a folder written
    whole has the files' and folders' modes the umask gives."""
    target = tmp_path / "model"

    def half(folder):
        (folder / "config.json").write_text("{}")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(ExplorerError, match="model"):
        files.write_folder(target, half, "the model")
    assert list(tmp_path.iterdir()) == []

    def whole(folder):
        (folder / "config.json").write_text("{}")
        (folder / "sub").mkdir()
        (folder / "sub" / "w.bin").write_bytes(b"1")

    files.write_folder(target, whole)
    file_mode = files.umask_mode()
    assert stat.S_IMODE((target / "config.json").stat().st_mode) == file_mode
    assert stat.S_IMODE((target / "sub" / "w.bin").stat().st_mode) == file_mode
    assert stat.S_IMODE(target.stat().st_mode) == file_mode | (file_mode & 0o444) >> 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    with pytest.raises(ExplorerError, match="already holds files"):
        files.write_folder(target, whole)
