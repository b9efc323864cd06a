"""Open any model file or folder the explorer supports, as one `Checkpoint`.

A checkpoint is what a transformers model would be built from: a config.json-style
dict and a state_dict in Hugging Face names, plus a tokenizer. GGUF files are
translated into exactly that, so the engine has a single path from files to model.
`progress`, when given, is called as progress(fraction: float, message: str).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.tokens import TextTokenizer

if TYPE_CHECKING:            # the package itself stays torch-free: gguf_copy reads ahead while torch is imported
    import torch

Progress = Callable[[float, str], None]


@dataclass
class Checkpoint:
    name: str
    path: Path
    format: str  # "hf" | "gguf"
    hf_config: dict
    tensors: dict[str, torch.Tensor] = field(repr=False)
    tokenizer: TextTokenizer = field(repr=False)
    license: str | None = None


def checkpoint_name(path: Path) -> str:
    """A readable name: the HF cache repo id ('org/name') for cached snapshots, else the file or folder name."""
    parts = path.parts
    if "snapshots" in parts:
        index = len(parts) - 1 - parts[::-1].index("snapshots")
        repo = parts[index - 1]
        if repo.startswith("models--"):
            return repo[len("models--"):].replace("--", "/")
    return path.stem if path.suffix == ".gguf" else path.name


def open_checkpoint(path: str | Path, progress: Progress | None = None) -> Checkpoint:
    """Read a Hugging Face folder or a .gguf file; every failure is a ModelLoadError naming the file."""
    path = Path(path).expanduser()
    try:
        return _open_checkpoint(path, progress)
    except OSError as error:        # a folder without read or search permission, a file gone while read
        from explorer.core.loaders.model_file import unreadable

        raise unreadable(Path(error.filename) if error.filename else path, error) from None


def _open_checkpoint(path: Path, progress: Progress | None) -> Checkpoint:
    if not path.exists():
        raise ModelLoadError(f"{path} does not exist.")
    if not path.is_dir() and path.suffix in (".bin", ".pt", ".pth", ".ckpt"):
        from explorer.core.loaders.hf_folder import CONVERT_HINT

        raise UnsupportedModelError(
            f"{path} is a pickle checkpoint, which is never unpickled here; {CONVERT_HINT}.")
    if not path.is_dir() and (path.name in ("config.json", "tokenizer.json") or path.suffix == ".safetensors"):
        path = path.parent
    if path.is_dir():
        from explorer.core.loaders.hf import read_hf_folder

        config, tensors, tokenizer, license_name = read_hf_folder(path, progress)
        kind = "hf"
    elif path.suffix.lower() == ".gguf":
        from explorer.core.loaders.gguf import read_gguf

        config, tensors, tokenizer, license_name = read_gguf(path, progress)
        kind = "gguf"
    else:
        raise UnsupportedModelError(
            f"{path} is neither a model folder nor a .gguf file; open a folder with config.json or a .gguf file.")
    return Checkpoint(name=checkpoint_name(path), path=path, format=kind, hf_config=config,
                      tensors=tensors, tokenizer=tokenizer, license=license_name)
