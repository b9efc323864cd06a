"""What a model path is, decided once (`open_model`), and opening an untrusted model file: only a regular
file is opened, and every OS failure is one sentence.

`open_model(path)` is the one door: it says whether a path is a Hugging Face folder (a folder, a
config.json or another file of one) or a .gguf file, and which files are involved, as `ModelFiles`,
or refuses it in one sentence. The loaders, the config reader, the store's listings and summaries,
the CLI and the app all ask it.

A FIFO named `model.safetensors` would block `open()` forever and a device would stream without end,
so the path is checked with os.stat first and opened with O_NONBLOCK (an open of a FIFO swapped in
after the check then returns at once), and the opened descriptor is checked again with fstat.
Torch- and numpy-free.
"""
from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from explorer.core.errors import ExplorerError, ModelLoadError, UnsupportedModelError
from explorer.core.files import kind_of as _kind


def unreadable(path: Path, error: OSError) -> ModelLoadError:
    """The one sentence for an OS error met while reading `path` (permission, I/O, a vanished file)."""
    if isinstance(error, PermissionError):
        return ModelLoadError(f"{path} cannot be read: permission denied.")
    if isinstance(error, FileNotFoundError):
        return ModelLoadError(f"{path} does not exist.")
    if error.errno == errno.ELOOP:
        return ModelLoadError(f"{path} cannot be read: it is a symbolic link that loops.")
    return ModelLoadError(f"{path} cannot be read ({error.strerror or error}).")


def regular_size(path: Path) -> int:
    """The size of `path` if it is a regular file (links followed); ModelLoadError naming what it is otherwise."""
    try:
        status = os.stat(path)
    except OSError as error:
        raise unreadable(path, error) from None
    if not stat.S_ISREG(status.st_mode):
        raise ModelLoadError(f"{path} is {_kind(status.st_mode)}, not a regular file; it was not opened.")
    return status.st_size


def is_regular(path: Path) -> bool:
    """Whether `path` is a regular file (links followed), without raising."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for binary reading, refused unless it is (still, after opening) a regular file."""
    regular_size(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:
        raise unreadable(path, error) from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise ModelLoadError(f"{path} is {_kind(mode)}, not a regular file; it was not opened.")
    return os.fdopen(descriptor, "rb")


def read_bytes(path: Path, limit: int, what: str) -> bytes:
    """The whole of a regular file of at most `limit` bytes (a size past it is refused unread)."""
    size = regular_size(path)
    if size > limit:
        raise ModelLoadError(f"{path} is {size:,} bytes, far more than any {what} holds; it was not read.")
    try:
        with open_regular(path) as handle:
            return handle.read(limit + 1)
    except OSError as error:
        raise unreadable(path, error) from None


# ----- the one decision of what a model path is --------------------------------------------
CONFIG_NAME = "config.json"
GGUF_SUFFIX = ".gguf"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")     # never unpickled (hf_folder refuses a folder of them)
CONVERT_HINT = ("convert it to safetensors in an environment you trust, e.g. "
                "safetensors.torch.save_file(torch.load(FILE, weights_only=True), 'model.safetensors')")
# Files of a Hugging Face folder that stand for the folder when one of them is chosen.
FOLDER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json",
                "model.safetensors.index.json")


class NotAModelError(UnsupportedModelError):
    """A path whose kind no loader reads (a .txt, a .zip): neither a folder, a JSON config nor a .gguf."""


@dataclass(frozen=True)
class ModelFiles:
    """What a model path is, decided once by `open_model`: its format and the files involved."""

    format: str     # "hf" | "gguf"
    path: Path      # what the model opens from: the folder (hf) or the .gguf file
    config: Path    # where its dimensions are read: a config file (hf) or the .gguf file's header
    name: str       # a readable name (checkpoint_name)


def checkpoint_name(path: Path, format: str = "hf") -> str:
    """A readable name: the HF cache repo id ('org/name') for cached snapshots, else the file or folder name
    (a .gguf file's without its suffix)."""
    parts = path.parts
    if "snapshots" in parts:
        index = len(parts) - 1 - parts[::-1].index("snapshots")
        repo = parts[index - 1]
        if repo.startswith("models--"):
            return repo[len("models--"):].replace("--", "/")
    return path.stem if format == "gguf" else path.name


def open_model(path: str | Path) -> ModelFiles:
    """What `path` is, as a model: a folder (with its config.json), a config.json or other file of a folder,
    a lone JSON config, or a .gguf file; anything else is refused in one sentence naming the path.
    Only os.stat is called: nothing is opened, so a FIFO is named for what it is and never blocks."""
    path = Path(path).expanduser()
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise unreadable(path, error) from None
    except ValueError:                          # a NUL byte in the path
        raise ModelLoadError(f"{str(path)!r:.200} is not a file name.") from None
    if stat.S_ISDIR(mode):
        config = path / CONFIG_NAME
        return _folder(path, config) if _present(config) else _gguf_in(path)
    regular_size(path)                          # a FIFO, a device, a socket: named, never opened
    suffix = path.suffix.lower()
    if suffix == GGUF_SUFFIX:
        return ModelFiles("gguf", path, path, checkpoint_name(path, "gguf"))
    if suffix in PICKLE_SUFFIXES:
        raise UnsupportedModelError(f"{path} is a pickle checkpoint, which is never unpickled here; {CONVERT_HINT}.")
    if suffix == ".safetensors" or path.name in FOLDER_FILES:
        if not _present(path.parent / CONFIG_NAME):     # the file chosen is named first (drive29: only its folder)
            alone = "a .safetensors file holds only weights" if suffix == ".safetensors" else f"{path.name} is no model"
            raise ModelLoadError(f"{path} needs a {CONFIG_NAME} beside it: {alone}.")
        return _folder(path.parent, path.parent / CONFIG_NAME)
    if suffix == ".json":                       # config.json, or a config saved under a name of its own
        return _folder(path.parent, path)
    raise NotAModelError(f"{path} is neither a model folder, a config.json nor a .gguf file.")


def _present(path: Path) -> bool:
    """Whether `path` is there (a link counts, whatever it points at); a folder that cannot be searched is
    named as such, not taken for one without the file (os.path.lexists says False to both)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        raise unreadable(path.parent, error) from None
    return True


def _folder(folder: Path, config: Path) -> ModelFiles:
    if not _present(config):
        raise ModelLoadError(f"{folder} has no {CONFIG_NAME}, so it is not a Hugging Face model folder.")
    return ModelFiles("hf", folder, config, checkpoint_name(folder))


def _gguf_in(folder: Path) -> ModelFiles:
    """A folder without a config.json that holds exactly one .gguf (a pulled GGUF model's store folder) opens as
    that file; with none or several it is no model, and the sentence says which. Listing the folder opens none
    of its files."""
    try:
        ggufs = sorted(p for p in folder.iterdir() if p.suffix.lower() == GGUF_SUFFIX)
    except OSError as error:
        raise unreadable(folder, error) from None
    if len(ggufs) == 1:
        return open_model(ggufs[0])
    if ggufs:
        raise ModelLoadError(f"{folder} holds {len(ggufs)} .gguf files and no {CONFIG_NAME}; open one of the files.")
    return _folder(folder, folder / CONFIG_NAME)            # refused: no config.json


def find_model(path: str | Path) -> ModelFiles | None:
    """open_model's answer, or None where it refuses the path (for listings, which skip what is not a model)."""
    try:
        return open_model(path)
    except ExplorerError:
        return None
