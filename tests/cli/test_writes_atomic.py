"""Every file the CLI writes is written atomically: on a full disk the previous file stays whole, no temporary
file is left beside it, and the error names the file and the full disk in one line (exit 2)."""
import errno
import os
import stat

import numpy as np
import pytest

from explorer.cli import main
from explorer.core import store

BUNDLED = str(store.resources_dir() / "models" / "shakespeare-gqa")


def _trace(out):
    return main(["trace", "--model", BUNDLED, "--prompt", "To be", "--steps", "1", "--out", str(out)])


def test_trace_out_on_a_full_disk_keeps_the_previous_npz(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run.npz"
    assert _trace(out) == 0
    before = out.read_bytes()
    real = np.lib.format.write_array
    calls = []

    def fills_the_disk(member, array, **kwargs):
        calls.append(1)
        if len(calls) == 2:                       # the first array is written, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(member, array, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", fills_the_disk)
    capsys.readouterr()
    assert _trace(out) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(out) in err and "disk is full" in err
    assert out.read_bytes() == before, "the user's previous .npz is whole"
    assert sorted(os.listdir(tmp_path)) == ["run.npz"], "no temporary file is left"
    with np.load(out) as arrays:
        assert "ids" in arrays.files


def test_trace_out_has_the_mode_the_umask_says(tmp_path):
    old = os.umask(0o022)
    try:
        assert _trace(tmp_path / "run.npz") == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "run.npz").stat().st_mode) == 0o644


@pytest.mark.parametrize("suffix", [".png", ".npy"])
def test_export_on_a_full_disk_keeps_the_previous_file(tmp_path, monkeypatch, capsys, suffix):
    from explorer.core import files

    out = tmp_path / f"map{suffix}"
    out.write_bytes(b"the previous export")
    real_replace = os.replace

    def full(source, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full)
    code = main(["export", "--model", BUNDLED, "--prompt", "To be", "--layer", "0", "--head", "0", "-o", str(out),
                 "--size", "200x200"])
    monkeypatch.setattr(files.os, "replace", real_replace)
    err = capsys.readouterr().err.strip()
    assert code == 2 and "disk is full" in err and str(out) in err and "\n" not in err
    assert out.read_bytes() == b"the previous export" and os.listdir(tmp_path) == [out.name]
