"""Open any model file or folder the explorer supports, as one `Checkpoint`.

`open_model(path)` (model_file.py, torch-free) decides once what a path is and which files are
involved; `open_checkpoint` then reads them: a config.json-style dict and a state_dict in Hugging
Face names, plus a tokenizer. GGUF files are translated into exactly that, so
the engine has a single path from files to model.
`progress`, when given, is called as progress(fraction: float, message: str).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.core.loaders.load_progress import READY_AT, Progress  # noqa: F401 (READY_AT re-exported)
from explorer.core.loaders.model_file import (  # noqa: F401
    CONFIG_NAME,
    GGUF_SUFFIX,
    ModelFiles,
    NotAModelError,
    checkpoint_name,
    find_model,
    open_model,
    unreadable,
)
from explorer.core.tokens import TextTokenizer

if TYPE_CHECKING:            # the package itself stays torch-free: gguf_copy reads ahead while torch is imported
    import torch


@dataclass
class Checkpoint:
    name: str
    path: Path
    format: str  # "hf" | "gguf"
    hf_config: dict
    tensors: dict[str, torch.Tensor] = field(repr=False)
    tokenizer: TextTokenizer = field(repr=False)
    license: str | None = None


def open_checkpoint(path: str | Path, progress: Progress | None = None) -> Checkpoint:
    """Read a Hugging Face folder or a .gguf file; every failure is a ModelLoadError naming the file."""
    path = Path(path).expanduser()
    try:
        return _open_checkpoint(open_model(path), progress)
    except OSError as error:        # a folder without read or search permission, a file gone while read
        raise unreadable(Path(error.filename) if error.filename else path, error) from None


def _open_checkpoint(model: ModelFiles, progress: Progress | None) -> Checkpoint:
    # the readers import torch (and gguf): the package stays torch-free for config_file, the CLI's --help and
    # the app's start-up, which read configs and headers only
    if model.format == "gguf":
        from explorer.core.loaders.gguf import read_gguf

        config, tensors, tokenizer, license_name = read_gguf(model.path, progress)
    else:
        from explorer.core.loaders.hf import read_hf_folder

        config, tensors, tokenizer, license_name = read_hf_folder(model.path, model.config, progress)
    return Checkpoint(name=model.name, path=model.path, format=model.format, hf_config=config,
                      tensors=tensors, tokenizer=tokenizer, license=license_name)
