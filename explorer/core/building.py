"""What every builder shares, below the builders themselves: modules built to be given a checkpoint's tensors
(SkipParameterInit, empty_modules), the dtype and device a model is placed on, and LoadedModel, the ready model
that runtime (decoder-only), encoder (BERT) and encdec build. It imports none of them, so that runtime may import
encoder and encdec, which use it, at the top.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import TorchFunctionMode

from explorer.core import device_names
from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.loaders.model_file import find_model
from explorer.core.trace import ModelInfo

if TYPE_CHECKING:
    from explorer.core.config import ModelConfig
    from explorer.core.model import Transformer

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class SkipParameterInit(TorchFunctionMode):
    """Modules built inside run no torch.nn.init: a checkpoint's tensors replace their values anyway. On the meta
    device (empty_modules) the first random init imports torch._dynamo (seconds of a cold start, for nothing); on
    the CPU (the BERT and encoder-decoder builds, which load a state dict) MiniLM's init took 130-190 ms of each
    open. A torch function mode is thread-local, so a model being trained on another thread still gets its init."""

    SKIPPED = frozenset({getattr(torch.nn.init, name) for name in dir(torch.nn.init)
                         if name.endswith("_") and not name.startswith("_")}
                        | {torch.Tensor.normal_, torch.Tensor.uniform_})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self.SKIPPED:
            return args[0] if args else kwargs.get("tensor")
        return func(*args, **(kwargs or {}))


@contextmanager
def empty_modules():
    """Modules built inside hold no numbers (the meta device) and run no torch.nn.init (SkipParameterInit): what
    is built here is given its tensors after (adopt). The one way a model is built empty: a what-if conversion
    built on the meta device alone, and its first random init imported torch._dynamo on the model thread, a 0.5-1 s
    hold of Python's lock that stopped the window under load (drive33)."""
    with torch.device("meta"), SkipParameterInit():
        yield


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
