"""What every builder shares, below the builders themselves: the dtype and device a model is placed on, and
LoadedModel, the ready model that runtime (decoder-only), encoder (BERT) and encdec build. It imports none
of them, so that runtime may import encoder and encdec, which use it, at the top.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from explorer.core import device_names
from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.loaders.model_file import find_model
from explorer.core.trace import ModelInfo

if TYPE_CHECKING:
    from explorer.core.config import ModelConfig
    from explorer.core.model import Transformer

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class LoadedModel:
    """A ready model: the module, its config, its tokenizer and what the panels need to know."""

    model: Transformer
    config: ModelConfig
    tokenizer: Any            # explorer.core.tokens.TextTokenizer, or None for a bare test model
    info: ModelInfo
    name: str
    path: Path | None = None


def torch_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ModelLoadError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return DTYPES[name]


def resolve_device(name: str) -> torch.device:
    """'cpu', 'cuda', 'cuda:1', 'mps' or 'auto'; an absent device is a user error."""
    device_names.check(name)
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "mps" if _mps_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"device {name!r} is not available on this machine (no CUDA)")
    if name == "mps" and not _mps_available():
        raise ModelLoadError("device 'mps' is not available on this machine")
    try:
        return torch.device(name)
    except RuntimeError:
        raise ModelLoadError(f"device {name!r} is not a device name (use cpu, cuda or mps)") from None


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def in_config_file(error: ModelLoadError, source: str) -> ModelLoadError:
    """`error`, a config reader's sentence naming a field, said of the file that holds it (a folder's
    config.json, a .gguf file): the readers see only a dict. A sentence that names the source already is kept."""
    if str(source) in str(error):
        return error
    model = find_model(source)
    return type(error)(f"{model.config if model else source}: {error}")


def load_built(checkpoint, build, model_info, device: str = "cpu", dtype: str = "float32") -> LoadedModel:
    """A LoadedModel of `checkpoint` built by a family's build(hf_config, tensors, source, device, dtype)
    and described by its model_info(model, config, name) (encoder.py, encdec.py); a config's refusal names
    its file, as a decoder's does (runtime.build_model)."""
    try:
        model, config = build(checkpoint.hf_config, checkpoint.tensors, str(checkpoint.path), device, dtype)
    except UnsupportedModelError as error:
        raise in_config_file(error, str(checkpoint.path)) from None
    return LoadedModel(model=model, config=config, tokenizer=checkpoint.tokenizer,
                       info=model_info(model, config, checkpoint.name), name=checkpoint.name,
                       path=Path(checkpoint.path) if checkpoint.path else None)
