"""Build a model from a config dict and HF-named tensors; load one from disk.

`build_model` is the one place where a checkpoint becomes a module: the config
chooses the pieces (model.py), the family's table renames the weights
(weights.py), and every name and shape is checked before assignment.
"""
from __future__ import annotations

import ctypes
import re
from pathlib import Path

import torch

from explorer.core import encdec, encoder
from explorer.core.building import (  # noqa: F401 (re-exported)
    DTYPES,
    LoadedModel,
    empty_modules,
    in_config_file,
    load_built,
    resolve_device,
    torch_dtype,
)
from explorer.core.config import ModelConfig
from explorer.core.config_schema import check_runnable
from explorer.core.errors import ModelLoadError
from explorer.core.families import FAMILIES, refuse_decoder_build
from explorer.core.loaders import READY_AT, open_checkpoint
from explorer.core.model import Transformer
from explorer.core.trace import ModelInfo
from explorer.core.weights import check_finite, map_weights, validate


def build_model(hf_config: dict, tensors: dict[str, torch.Tensor], source: str = "checkpoint",
                device: str = "cpu", dtype: str = "float32", fuse: bool = True) -> tuple[Transformer, ModelConfig]:
    """Assemble a Transformer from a transformers config dict and HF-named tensors (validated);
    `fuse=False` leaves Transformer.fuse to the caller (load_model, once it let go of the tensors)."""
    refuse_decoder_build(hf_config, source)                 # BERT and encoder-decoders: see load_model
    try:
        config = ModelConfig.from_hf(hf_config)
        check_runnable(config)
    except ModelLoadError as error:              # name the file: the config reader only sees a dict
        raise in_config_file(error, source) from None
    agree_with_weights(config, tensors, source)              # before a module is built from the config
    check_finite(tensors, source)
    with empty_modules():
        model = Transformer(config)
    expected = model.state_dict()
    origins: dict[str, str] = {}
    mapped = map_weights(config.family, tensors, config.n_layers, source, origins)
    tied = config.tie_embeddings and "lm_head.weight" not in mapped
    if tied and "embed.weight" in mapped:
        mapped["lm_head.weight"] = mapped["embed.weight"]
    validate(mapped, expected, source, origins)
    target_device, target_dtype = resolve_device(device), torch_dtype(dtype)
    # Loaders hand over tensors in owned memory (see loaders/gguf_cache.py): no copy when nothing changes.
    converted = {name: tensor.to(device=target_device, dtype=target_dtype) for name, tensor in mapped.items()}
    if tied:
        converted["lm_head.weight"] = converted["embed.weight"]
    return adopt(model, converted, tied, fuse), config


_LAYER = re.compile(r"(?:^|\.)(?:layers|h|layer)\.(\d+)\.")
_EXPERT = re.compile(r"\.experts\.(\d+)\.")


def _highest(pattern: re.Pattern, names) -> tuple[int, str | None]:
    """(highest index + 1, the name holding it) over the names the pattern matches; (0, None) if none."""
    found = [(int(m.group(1)), name) for name in names if (m := pattern.search(name))]
    top = max(found, default=(-1, None))
    return top[0] + 1, top[1]


def _decoding_names(config: ModelConfig, names) -> list[str]:
    """The tensor names of the decoding layers (and the rest): without the layers >= n_layers where the
    family's checkpoints put multi-token-prediction layers there."""
    row = FAMILIES.get(config.family)
    if row is None or not row.mtp_layers:
        return list(names)
    return [name for name in names if not ((m := _LAYER.search(name)) and int(m.group(1)) >= config.n_layers)]


def agree_with_weights(config: ModelConfig, tensors: dict, source: str) -> None:
    """The config's layer and expert counts against the weights' names (read from the headers), so that
    a config asking for a million layers is refused before a million modules are built. A family whose
    checkpoints hold multi-token-prediction layers after the decoding ones (ModelFamily.mtp_layers,
    DeepSeek-V3) is counted without them: map_weights skips them."""
    names = _decoding_names(config, tensors)
    layers, name = _highest(_LAYER, names)
    if layers != config.n_layers:
        held = f"layers up to {name}" if name else "no numbered layers"
        raise ModelLoadError(f"{source}: the config says num_hidden_layers = {config.n_layers}, but the weights "
                             f"hold {held}.")
    experts, _ = _highest(_EXPERT, names)
    stacked = [tensors[name].shape[0] for name in names
               if name.endswith(".experts.down_proj") and tensors[name].ndim == 3]
    experts = experts or max(stacked, default=0)          # transformers 5 stacks the experts: (E, d, d_ff)
    has_moe = any(config.is_moe_layer(layer) for layer in range(config.n_layers))   # first_k_dense may be all
    if has_moe and experts != config.n_routed_experts:
        raise ModelLoadError(f"{source}: the config says n_routed_experts = {config.n_routed_experts}, but the "
                             f"weights hold {experts} experts.")


def adopt(model: Transformer, state: dict[str, torch.Tensor], tied: bool, fuse: bool = True) -> Transformer:
    """Give a meta-built model the tensors of `state` (no copy), tie W_U to E if asked, and fuse it."""
    # load_state_dict(assign=True) gives each tensor the requires_grad of the parameter it replaces, which
    # an inference tensor (a model loaded under inference_mode) refuses outside that mode: ask for none.
    model.requires_grad_(False)
    model.load_state_dict(state, assign=True, strict=True)
    for module in model.modules():          # assign=True keeps the given tensors; make them Parameters again
        for key, value in list(module._parameters.items()):
            if value is not None and not isinstance(value, torch.nn.Parameter):
                module._parameters[key] = torch.nn.Parameter(value, requires_grad=False)
    if tied:
        model.lm_head.weight = model.embed.weight
    model.requires_grad_(False).eval()
    return model.fuse() if fuse else model


def model_info(model: Transformer, config: ModelConfig, name: str) -> ModelInfo:
    weight = model.embed.weight
    n_params = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    return ModelInfo(
        name=name, family=config.family, attention=config.attention_kind, n_layers=config.n_layers,
        n_heads=config.n_heads, n_kv_heads=config.n_kv_heads, d_model=config.d_model,
        d_qk=config.d_qk, d_v=config.d_v, vocab_size=config.vocab_size, max_positions=config.max_positions,
        n_params=int(n_params), dtype=str(weight.dtype).removeprefix("torch."), device=str(weight.device),
        layer_kinds=config.layer_kinds, sliding_window=config.sliding_window, positional=config.positional,
        mla_rank=config.kv_lora_rank if config.mla else None,
        mla_rope_dim=config.qk_rope_dim if config.mla else None, qk_norm=config.qk_norm,
    )


def from_tensors(hf_config: dict, tensors: dict[str, torch.Tensor], name: str = "model", tokenizer=None,
                 device: str = "cpu", dtype: str = "float32", path: Path | None = None,
                 take: bool = False) -> LoadedModel:
    """A LoadedModel from in-memory weights (tests, trained models, converted checkpoints).

    `take=True` hands the dict over: it is emptied before the model rewrites its weights (Transformer.fuse
    stores them by columns), so each original is freed as its rewrite is made and nothing is held twice."""
    model, config = build_model(hf_config, tensors, source=str(path) if path else name, device=device, dtype=dtype,
                                fuse=not take)
    if take:
        tensors.clear()                         # the model holds the only references now
        model.fuse()                            # one group at a time, each original freed as it is rewritten
        release_freed_memory()
    return LoadedModel(model=model, config=config, tokenizer=tokenizer, info=model_info(model, config, name),
                       name=name, path=path)


# The builders of the families that are not decoder-only, by the name their row gives them
# (families.ModelFamily.builder); each is load(checkpoint, device, dtype) -> LoadedModel.
BUILDERS = {"encoder": encoder.load, "encdec": encdec.load}


def load_model(path_or_checkpoint, device: str = "cpu", dtype: str = "float32", progress=None) -> LoadedModel:
    """Open a HF folder or GGUF file (or take an opened Checkpoint) and build the model from it."""
    checkpoint, opened_here = path_or_checkpoint, isinstance(path_or_checkpoint, (str, Path))
    if opened_here:
        checkpoint = open_checkpoint(path_or_checkpoint, progress=_reading(progress))
        if progress is not None:        # short of full: a full bar said the load was done while the model was made
            progress(READY_AT, "making the model ready")
    row = FAMILIES.get(str(checkpoint.hf_config.get("model_type") or ""))
    if row is not None and not row.decoder_only:                    # encoder-only (BERT) and encoder-decoder models
        check_finite(checkpoint.tensors, str(checkpoint.path))
        return bound_tokenizer(BUILDERS[row.builder](checkpoint, device=device, dtype=dtype), checkpoint)
    with torch.inference_mode():
        return bound_tokenizer(from_tensors(checkpoint.hf_config, checkpoint.tensors, name=checkpoint.name,
                            tokenizer=checkpoint.tokenizer, device=device, dtype=dtype,
                            path=Path(checkpoint.path) if checkpoint.path else None, take=opened_here), checkpoint)


def _reading(progress):
    """The load's progress while the files are read: up to READY_AT of the bar, the rest is making the model."""
    return None if progress is None else (lambda share, text: progress(min(share, READY_AT), text))


def bound_tokenizer(loaded: LoadedModel, checkpoint) -> LoadedModel:
    """Tell the model's tokenizer its context and file: it then refuses a text far too long to fit before
    tokenizing it, bounds the time it spends, and names the file in its errors (tokens.TextTokenizer)."""
    tokenizer = loaded.tokenizer
    if tokenizer is not None and hasattr(tokenizer, "context"):
        tokenizer.context = int(loaded.info.max_positions)
        tokenizer.source = str(checkpoint.path)
        tokenizer.longest_piece()       # the bound reads it: found here, with the load, not at the first prompt
    return loaded                       # (on the app's GUI thread: 0.6 s over Gemma's 262k pieces, drive29)


def release_freed_memory() -> None:
    """Hand the pages of freed tensors back to the system (glibc's malloc_trim). Weights rewritten while
    loading leave freed blocks the allocator would otherwise keep: SmolLM2-135M held ~230 MB more."""
    try:
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)      # the process's own C library
    except (OSError, TypeError):                # Windows has no CDLL(None); its allocator returns pages
        return
    if trim is not None:                        # glibc; musl and macOS have no malloc_trim
        trim(0)
