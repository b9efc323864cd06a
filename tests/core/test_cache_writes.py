"""The two files a GGUF load writes into the model store, its float32 copy and its built tokenizer, are
written atomically: a full disk or an interrupted write leaves neither a part of a file where the copy
or the tokenizer would be nor a temporary file, the load itself still gives the model, and the next
load writes them whole."""
from __future__ import annotations

import errno
import pathlib

import pytest
from safetensors import SafetensorError

from explorer.core.loaders import gguf as gguf_loader
from explorer.core.loaders import gguf_cache, open_checkpoint
from tests.core.test_gguf_cache import assert_same, fresh, no_dequantizing, write_gguf

# What safetensors itself raises when the disk fills under it (its Rust writer reports no OSError).
FULL_DISK_COPY = SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
FULL_DISK = OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A model store of the test's own, with copies on (files outside the store are never copied)."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    monkeypatch.delenv(gguf_cache.DISABLE_ENV, raising=False)
    return tmp_path / "store"


def _store_files(folder: pathlib.Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _half_written_copy(error: BaseException):
    """A copy's writer that fills the disk (or is interrupted) halfway: half of the real file, then `error`."""
    from safetensors.torch import save as to_bytes

    def save_file(tensors, filename, metadata=None, progress=None):
        data = to_bytes(tensors, metadata=metadata)
        pathlib.Path(filename).write_bytes(data[: len(data) // 2])
        raise error
    return save_file


@pytest.mark.parametrize("error", [FULL_DISK_COPY, KeyboardInterrupt()], ids=["full disk", "interrupted"])
def test_a_copy_cut_short_leaves_nothing_and_the_next_load_writes_it_whole(store, tmp_path, monkeypatch, error):
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    expected = fresh(path)
    with monkeypatch.context() as patch:
        patch.setattr(gguf_cache, "write_safetensors", _half_written_copy(error))
        if isinstance(error, KeyboardInterrupt):
            with pytest.raises(KeyboardInterrupt):
                open_checkpoint(path)
        else:
            assert_same(open_checkpoint(path).tensors, expected)     # a full disk only loses the speed-up
    copy = gguf_cache.cache_path(path)
    assert not copy.exists(), "a part of the copy was left where the copy belongs"
    assert not [name for name in _store_files(path.parent) if name.endswith(".tmp") or ".tmp." in name]
    assert_same(open_checkpoint(path).tensors, expected)             # the next load writes it whole...
    no_dequantizing(monkeypatch)
    assert_same(open_checkpoint(path).tensors, expected)             # ...and the one after reads it


class _FullDiskFile:
    """A file opened for writing whose write puts half the bytes on disk, then fails with `error`."""

    def __init__(self, real, error: BaseException):
        self.real, self.error = real, error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()
        return False

    def write(self, data):
        self.real.write(data[: len(data) // 2])
        self.real.flush()
        raise self.error


@pytest.mark.parametrize("error", [FULL_DISK, KeyboardInterrupt()], ids=["full disk", "interrupted"])
def test_a_tokenizer_save_cut_short_leaves_nothing_and_the_next_load_saves_it(store, tmp_path, monkeypatch, error):
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    built = open_checkpoint(path).tokenizer
    saved = gguf_loader.tokenizer_cache_path(path)
    saved.unlink()
    real_open = pathlib.Path.open

    def opening(self, mode="r", *args, **kwargs):
        handle = real_open(self, mode, *args, **kwargs)
        if "w" in mode and saved.name in self.name:
            return _FullDiskFile(handle, error)
        return handle

    with monkeypatch.context() as patch:
        patch.setattr(pathlib.Path, "open", opening)
        if isinstance(error, KeyboardInterrupt):
            with pytest.raises(KeyboardInterrupt):
                open_checkpoint(path)
        else:
            assert open_checkpoint(path).tokenizer.encode("Paris").ids.tolist() == \
                built.encode("Paris").ids.tolist()
    assert not saved.exists(), "a part of the saved tokenizer was left where it belongs"
    assert not [name for name in _store_files(path.parent) if saved.name in name], _store_files(path.parent)
    again = open_checkpoint(path).tokenizer
    assert saved.is_file() and again.tokenizer.to_str() == built.tokenizer.to_str()


def test_a_pipe_where_the_copy_belongs_is_neither_read_nor_written(store, tmp_path):
    """A FIFO put where the copy would be: the load reads the GGUF itself, without waiting on the pipe."""
    import os

    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    expected = fresh(path)
    copy = gguf_cache.cache_path(path)
    os.mkfifo(copy)
    assert_same(open_checkpoint(path).tensors, expected)
    assert pathlib.Path(copy).is_fifo()
