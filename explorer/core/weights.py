"""Hugging Face state_dict tensors -> our module's weights, by the table the family's row holds
(families.ModelFamily.weights, declared torch-free in weight_names.py).

A rule maps one HF name pattern (`{i}` = layer, `{p}` = weight|bias) to one or more internal names and the
Layout of the tensor that holds them: `split` cuts it into our parts at load and `join` puts them back for
save_hf (GPT-2's Conv1D stores W transposed and fuses Q, K, V; Phi-3 fuses qkv and gate|up; transformers 5
fuses each expert's gate and up projections). `map_weights` applies the table and checks every name, shape
and dtype against the model the config builds, so a wrong checkpoint fails with one sentence instead of a
traceback.
"""
from __future__ import annotations

import re

import torch

from explorer.core.errors import ModelLoadError, NonFiniteError
from explorer.core.families import FAMILIES
from explorer.core.weight_names import SAME, Layout


def _turned(t: torch.Tensor) -> torch.Tensor:
    return t.t() if t.dim() == 2 else t


def _cut(layout: Layout, t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The checkpoint tensor's parts, as stored (before any transposition)."""
    if layout.pieces == 1:
        return (t,)
    if layout.first_square:
        first = t.shape[1]
        each, odd = divmod(t.shape[layout.dim] - first, layout.pieces - 1)
        if odd or each <= 0:
            return (t,)     # not Phi-3's Q | K | V: validate names the weight it lacks
        return tuple(t.split((first, *[each] * (layout.pieces - 1)), dim=layout.dim))
    return tuple(t.chunk(layout.pieces, dim=layout.dim))


def split(layout: Layout, t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """A checkpoint tensor -> the model's parts it holds (at load)."""
    parts = _cut(layout, t)
    return tuple(_turned(part) for part in parts) if layout.transposed else parts


def join(layout: Layout, parts: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The model's parts -> the checkpoint tensor that holds them (as save_hf writes it back); split's inverse."""
    stored = tuple(_turned(part) for part in parts) if layout.transposed else tuple(parts)
    return stored[0] if layout.pieces == 1 else torch.cat(stored, dim=layout.dim)


# Names that hold no weights of the language model (buffers, other towers) and are skipped.
IGNORED = re.compile(r"(.*rotary_emb\.inv_freq|h\.\d+\.attn\.(masked_)?bias"
                     r"|vision_tower\..*|multi_modal_projector\..*)$")
PREFIXES = (("transformer.", ""), ("model.language_model.", "model."), ("language_model.model.", "model."),
            ("language_model.lm_head.", "lm_head."))
_PER_EXPERT = re.compile(r"^(.*\.mlp\.experts)\.(\d+)\.(gate|up|down)_proj\.weight$")


def rule_of(spec: tuple) -> tuple[tuple[str, ...], Layout]:
    """A table row's (our names, layout): one name or a tuple of names, SAME where the row names none."""
    targets, layout = (spec[0], spec[1]) if len(spec) == 2 else (spec[0], SAME)
    return (targets if isinstance(targets, tuple) else (targets,)), layout


def _compile(table: dict) -> list[tuple[re.Pattern, tuple[str, ...], Layout]]:
    rules = []
    for hf_pattern, spec in table.items():
        targets, layout = rule_of(spec)
        regex = re.escape(hf_pattern).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", r"(?P<p>weight|bias)")
        rules.append((re.compile(f"^{regex}$"), targets, layout))
    return rules


def _normalized_names(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {}
    for name, tensor in tensors.items():
        for prefix, replacement in PREFIXES:
            if name.startswith(prefix):
                name = replacement + name[len(prefix):]
                break
        out[name] = tensor
    return _stack_experts(out)


def _stack_experts(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Per-expert checkpoint names (experts.{e}.gate_proj) -> the stacked transformers-5 form."""
    groups: dict[str, dict[tuple[str, int], torch.Tensor]] = {}
    out = {}
    for name, tensor in tensors.items():
        match = _PER_EXPERT.match(name)
        if match:
            groups.setdefault(match[1], {})[(match[3], int(match[2]))] = tensor
        else:
            out[name] = tensor
    for base, parts in groups.items():
        n = 1 + max(e for _, e in parts)
        try:
            gate_up = [torch.cat((parts[("gate", e)], parts[("up", e)])) for e in range(n)]
            out[f"{base}.gate_up_proj"] = torch.stack(gate_up)                       # (E, 2 d_ff, d)
            out[f"{base}.down_proj"] = torch.stack([parts[("down", e)] for e in range(n)])  # (E, d, d_ff)
        except KeyError as missing:
            raise ModelLoadError(f"{base} lacks expert weight {missing.args[0]}") from None
    return out


_LAYER = re.compile(r"^model\.layers\.(\d+)\.")


def _layer_of(name: str) -> int:
    """The block index of a model.layers.{i}.* name, -1 for any other (embeddings, final norm, head)."""
    match = _LAYER.match(name)
    return int(match[1]) if match else -1


def map_weights(family: str, tensors: dict[str, torch.Tensor], n_layers: int, source: str,
                origins: dict[str, str] | None = None) -> dict[str, torch.Tensor]:
    """Rename (and transform) HF tensors into our names; unknown names raise ModelLoadError. `origins`, if
    given, gets each of our names' tensor name in the file (validate's sentences name that one)."""
    row = FAMILIES[family]
    rules = _compile(row.weights)
    mapped: dict[str, torch.Tensor] = {}
    for name, tensor in _normalized_names(tensors).items():
        if IGNORED.match(name) or (row.mtp_layers and _layer_of(name) >= n_layers):
            continue            # a multi-token-prediction layer (DeepSeek-V3's) is not part of decoding
        for regex, targets, layout in rules:
            match = regex.match(name)
            if match:
                fields = {k: v for k, v in match.groupdict().items() if v is not None}
                for target, part in zip(targets, split(layout, tensor)):
                    mapped[target.format(**fields)] = part
                    if origins is not None:
                        origins[target.format(**fields)] = name
                break
        else:
            raise ModelLoadError(f"{source}: weight {name!r} is not part of a {family} model.")
    return mapped


def validate(mapped: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], source: str,
             origins: dict[str, str] | None = None) -> None:
    """Every expected weight present, with the expected shape and a floating dtype; nothing extra. A weight is
    named as the file names it where `origins` (map_weights') knows, with our name for a part of a fused one."""
    def named(name: str) -> str:
        origin = (origins or {}).get(name, name)
        return origin if list((origins or {}).values()).count(origin) <= 1 else f"{origin} (its part {name})"

    for name, like in expected.items():
        if name not in mapped:
            raise ModelLoadError(f"{source} lacks the weight {name} of shape {tuple(like.shape)}")
        tensor = mapped[name]
        if tuple(tensor.shape) != tuple(like.shape):
            raise ModelLoadError(f"{source}: weight {named(name)} has shape {tuple(tensor.shape)}, the config "
                                 f"expects {tuple(like.shape)}")
        if not tensor.is_floating_point():
            raise ModelLoadError(f"{source}: weight {named(name)} has dtype {tensor.dtype}, expected a floating "
                                 "point type")
    extra = sorted(set(mapped) - set(expected))
    if extra:
        raise ModelLoadError(f"{source}: weight {named(extra[0])} does not fit the config (layer count or options "
                             "differ)")


FINITE_CHUNK = 1 << 24          # elements tested at once when one is not finite: the mask stays 16 MB


def check_finite(tensors: dict[str, torch.Tensor], source: str) -> None:
    """NonFiniteError naming the first floating-point tensor that holds a NaN or an Inf.

    llama.cpp's --check-tensors does this scan. A NaN or an Inf anywhere makes a tensor's sum NaN or
    infinite (IEEE 754: inf + x = inf, inf - inf = NaN, NaN + x = NaN), so one vectorised sum per tensor
    answers for all its elements; only a sum that is not finite (a bad element, or finite values whose
    sum overflows) is looked at element by element. SmolLM2-135M, one thread: 18 ms of CPU for the sums,
    335 ms for torch.isfinite(t).all() per tensor, of a 1.07 s load."""
    for name, tensor in tensors.items():
        if not tensor.is_floating_point():
            continue
        accumulate = torch.float64 if tensor.dtype == torch.float64 else torch.float32
        if bool(torch.isfinite(tensor.sum(dtype=accumulate))):
            continue
        flat = tensor.reshape(-1)
        for start in range(0, flat.numel(), FINITE_CHUNK):
            bad = ~torch.isfinite(flat[start:start + FINITE_CHUNK])
            if bool(bad.any()):
                index = start + int(bad.nonzero()[0, 0])
                raise NonFiniteError(f"{source}: weight {name} holds {float(flat[index])} at flat index {index:,}; a "
                                     "model with a NaN or infinite weight computes meaningless numbers.")
