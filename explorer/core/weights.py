"""Hugging Face state_dict names -> our module names, one declarative table per family
(named by the family's row, families.ModelFamily.weights, and looked up here by that name: table_of).

A rule maps one HF name pattern (`{i}` = layer, `{p}` = weight|bias) to one or
more internal names and a Conversion, split at load and joined by save_hf
(GPT-2's Conv1D stores W transposed and fuses Q, K, V; Phi-3 fuses qkv and
gate|up; transformers 5 fuses each expert's gate and up projections).
`map_weights` applies the table and checks every name, shape and dtype
against the model the config builds, so a wrong checkpoint fails with one
sentence instead of a traceback.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import torch

from explorer.core.errors import ModelLoadError, NonFiniteError
from explorer.core.families import FAMILIES


@dataclass(frozen=True)
class Conversion:
    """A checkpoint tensor -> the model's parts (`split`, at load), and the parts -> that tensor (`join`, as
    save_hf writes it back): each declared beside the other, so that join(split(t)) == t is read, not guessed."""

    split: Callable[[torch.Tensor], tuple[torch.Tensor, ...]]
    join: Callable[[tuple[torch.Tensor, ...]], torch.Tensor]


def _turned(t: torch.Tensor) -> torch.Tensor:
    return t.t() if t.dim() == 2 else t


def _chunks(count: int, dim: int) -> Conversion:
    """Equal pieces along `dim`, joined again along it."""
    return Conversion(lambda t: tuple(t.chunk(count, dim=dim)), lambda parts: torch.cat(parts, dim=dim))


SAME = Conversion(lambda t: (t,), lambda parts: parts[0])
# GPT-2's Conv1D stores W as (in, out): W^T of a Linear weight (a bias is kept as it is).
TRANSPOSED = Conversion(lambda t: (_turned(t),), lambda parts: _turned(parts[0]))
# GPT-2 c_attn: (d, 3d) weight or (3d,) bias -> W^Q, W^K, W^V as (d, d) Linear weights.
CONV1D_QKV = Conversion(lambda t: tuple(_turned(part) for part in t.chunk(3, dim=-1)),
                        lambda parts: torch.cat([_turned(part) for part in parts], dim=-1))
# Stacked experts (E, 2 d_ff, d) -> W_gate, W_up, each (E, d_ff, d).
EXPERTS_GATE_UP = _chunks(2, 1)


def _phi3_qkv_split(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Phi-3 qkv_proj ((N_Q + 2 N_KV) d_h, d) -> W^Q (N_Q d_h rows), W^K and W^V (N_KV d_h rows each), as
    transformers' Phi3Attention slices it. There d_h = d / N_Q (Phi3Config names no head_dim), so W^Q has
    as many rows as the tensor has columns; a config whose N_Q d_h is not d fails validate's shape check."""
    query_rows = t.shape[1]
    key_rows, rest = divmod(t.shape[0] - query_rows, 2)
    if rest or key_rows <= 0:
        return (t,)         # not Q | K | V of Phi-3: validate names the weight it lacks
    return tuple(t.split((query_rows, key_rows, key_rows), dim=0))


# Phi-3 qkv_proj -> W^Q, W^K, W^V, with N_KV <= N_Q (GQA, as Phi-3-medium's 10 K/V heads for 40 query heads).
PHI3_QKV = Conversion(_phi3_qkv_split, lambda parts: torch.cat(parts, dim=0))
# Phi-3 gate_up_proj (2 d_ff, d) -> W_gate, W_up (transformers: gate, up = (x W^T).chunk(2, dim=-1)).
PHI3_GATE_UP = _chunks(2, 0)


_ATTN = {f"model.layers.{{i}}.self_attn.{n}_proj.{{p}}": (f"layers.{{i}}.attn.w{n}.{{p}}",) for n in "qkvo"}
_GATED = {f"model.layers.{{i}}.mlp.{n}_proj.weight": (f"layers.{{i}}.ffn.w_{n}.weight",)
          for n in ("gate", "up", "down")}
_GATED_BIAS = {f"model.layers.{{i}}.mlp.{n}_proj.bias": (f"layers.{{i}}.ffn.w_{n}.bias",)
               for n in ("gate", "up", "down")}
_COMMON = {
    "model.embed_tokens.weight": ("embed.weight",),
    "model.norm.weight": ("norm.weight",),
    "lm_head.weight": ("lm_head.weight",),
    "model.layers.{i}.input_layernorm.weight": ("layers.{i}.attn_norm.weight",),
}

DENSE = {
    **_COMMON, **_ATTN, **_GATED, **_GATED_BIAS,
    "model.layers.{i}.post_attention_layernorm.weight": ("layers.{i}.ffn_norm.weight",),
    "model.layers.{i}.self_attn.q_norm.weight": ("layers.{i}.attn.q_norm.weight",),
    "model.layers.{i}.self_attn.k_norm.weight": ("layers.{i}.attn.k_norm.weight",),
}

GEMMA3 = {
    **DENSE,
    "model.layers.{i}.post_attention_layernorm.weight": ("layers.{i}.post_attn_norm.weight",),
    "model.layers.{i}.pre_feedforward_layernorm.weight": ("layers.{i}.ffn_norm.weight",),
    "model.layers.{i}.post_feedforward_layernorm.weight": ("layers.{i}.post_ffn_norm.weight",),
}

# Gemma 2 names its sandwich norms as Gemma 3 does; Gemma 3's q_norm and k_norm are in neither a Gemma 2
# checkpoint nor the model its config builds (qk_norm off), so the one table maps both.
GEMMA2 = GEMMA3

GPT2 = {
    "wte.weight": ("embed.weight",),
    "wpe.weight": ("pos.weight",),
    "ln_f.{p}": ("norm.{p}",),
    "lm_head.weight": ("lm_head.weight",),
    "h.{i}.ln_1.{p}": ("layers.{i}.attn_norm.{p}",),
    "h.{i}.ln_2.{p}": ("layers.{i}.ffn_norm.{p}",),
    "h.{i}.attn.c_attn.{p}": (("layers.{i}.attn.wq.{p}", "layers.{i}.attn.wk.{p}", "layers.{i}.attn.wv.{p}"),
                              CONV1D_QKV),
    "h.{i}.attn.c_proj.{p}": ("layers.{i}.attn.wo.{p}", TRANSPOSED),
    "h.{i}.mlp.c_fc.{p}": ("layers.{i}.ffn.w_in.{p}", TRANSPOSED),
    "h.{i}.mlp.c_proj.{p}": ("layers.{i}.ffn.w_out.{p}", TRANSPOSED),
}

PHI3 = {
    **_COMMON,
    "model.layers.{i}.self_attn.qkv_proj.weight": (
        ("layers.{i}.attn.wq.weight", "layers.{i}.attn.wk.weight", "layers.{i}.attn.wv.weight"), PHI3_QKV),
    "model.layers.{i}.self_attn.o_proj.weight": ("layers.{i}.attn.wo.weight",),
    "model.layers.{i}.mlp.gate_up_proj.weight": (("layers.{i}.ffn.w_gate.weight", "layers.{i}.ffn.w_up.weight"),
                                                 PHI3_GATE_UP),
    "model.layers.{i}.mlp.down_proj.weight": ("layers.{i}.ffn.w_down.weight",),
    "model.layers.{i}.post_attention_layernorm.weight": ("layers.{i}.ffn_norm.weight",),
}

_MLA = {
    "model.layers.{i}.self_attn.q_proj.weight": ("layers.{i}.attn.wq.weight",),
    "model.layers.{i}.self_attn.q_a_proj.{p}": ("layers.{i}.attn.wq_a.{p}",),
    "model.layers.{i}.self_attn.q_a_layernorm.weight": ("layers.{i}.attn.q_norm.weight",),
    "model.layers.{i}.self_attn.q_b_proj.weight": ("layers.{i}.attn.wq_b.weight",),
    "model.layers.{i}.self_attn.kv_a_proj_with_mqa.{p}": ("layers.{i}.attn.wkv_a.{p}",),
    "model.layers.{i}.self_attn.kv_a_layernorm.weight": ("layers.{i}.attn.kv_norm.weight",),
    "model.layers.{i}.self_attn.kv_b_proj.weight": ("layers.{i}.attn.wkv_b.weight",),
    "model.layers.{i}.self_attn.o_proj.{p}": ("layers.{i}.attn.wo.{p}",),
}
DEEPSEEK = {
    **_COMMON, **_GATED, **_MLA,
    "model.layers.{i}.post_attention_layernorm.weight": ("layers.{i}.ffn_norm.weight",),
    "model.layers.{i}.mlp.gate.weight": ("layers.{i}.ffn.router.weight",),
    "model.layers.{i}.mlp.gate.e_score_correction_bias": ("layers.{i}.ffn.router.bias",),
    "model.layers.{i}.mlp.experts.gate_up_proj": (("layers.{i}.ffn.experts.w_gate", "layers.{i}.ffn.experts.w_up"),
                                                  EXPERTS_GATE_UP),
    "model.layers.{i}.mlp.experts.down_proj": ("layers.{i}.ffn.experts.w_down",),
    **{f"model.layers.{{i}}.mlp.shared_experts.{n}_proj.weight": (f"layers.{{i}}.ffn.shared.w_{n}.weight",)
       for n in ("gate", "up", "down")},
}

# Each table by the name a family row gives it (families.ModelFamily.weights).
TABLES = {"DENSE": DENSE, "GEMMA3": GEMMA3, "GEMMA2": GEMMA2, "GPT2": GPT2, "PHI3": PHI3, "DEEPSEEK": DEEPSEEK}


def table_of(row) -> dict:
    """The HF name -> our name table that maps a decoder-only row's checkpoints (the one its `weights` names)."""
    return TABLES[row.weights]


# Names that hold no weights of the language model (buffers, other towers) and are skipped.
IGNORED = re.compile(r"(.*rotary_emb\.inv_freq|h\.\d+\.attn\.(masked_)?bias"
                     r"|vision_tower\..*|multi_modal_projector\..*)$")
PREFIXES = (("transformer.", ""), ("model.language_model.", "model."), ("language_model.model.", "model."),
            ("language_model.lm_head.", "lm_head."))
_PER_EXPERT = re.compile(r"^(.*\.mlp\.experts)\.(\d+)\.(gate|up|down)_proj\.weight$")


def rule_of(spec: tuple) -> tuple[tuple[str, ...], Conversion]:
    """A table row's (our names, conversion): one name or a tuple of names, SAME where the row names none."""
    targets, conversion = (spec[0], spec[1]) if len(spec) == 2 else (spec[0], SAME)
    return (targets if isinstance(targets, tuple) else (targets,)), conversion


def _compile(table: dict) -> list[tuple[re.Pattern, tuple[str, ...], Conversion]]:
    rules = []
    for hf_pattern, spec in table.items():
        targets, transform = rule_of(spec)
        regex = re.escape(hf_pattern).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", r"(?P<p>weight|bias)")
        rules.append((re.compile(f"^{regex}$"), targets, transform))
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


def map_weights(family: str, tensors: dict[str, torch.Tensor], n_layers: int, source: str) -> dict[str, torch.Tensor]:
    """Rename (and transform) HF tensors into our names; unknown names raise ModelLoadError."""
    row = FAMILIES[family]
    rules = _compile(table_of(row))
    mapped: dict[str, torch.Tensor] = {}
    for name, tensor in _normalized_names(tensors).items():
        if IGNORED.match(name) or (row.mtp_layers and _layer_of(name) >= n_layers):
            continue            # a multi-token-prediction layer (DeepSeek-V3's) is not part of decoding
        for regex, targets, transform in rules:
            match = regex.match(name)
            if match:
                fields = {k: v for k, v in match.groupdict().items() if v is not None}
                for target, part in zip(targets, transform.split(tensor)):
                    mapped[target.format(**fields)] = part
                break
        else:
            raise ModelLoadError(f"{source}: weight {name!r} is not part of a {family} model")
    return mapped


def validate(mapped: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], source: str) -> None:
    """Every expected weight present, with the expected shape and a floating dtype; nothing extra."""
    for name, like in expected.items():
        if name not in mapped:
            raise ModelLoadError(f"{source} lacks the weight {name} of shape {tuple(like.shape)}")
        tensor = mapped[name]
        if tuple(tensor.shape) != tuple(like.shape):
            raise ModelLoadError(
                f"{source}: weight {name} has shape {tuple(tensor.shape)}, the config expects {tuple(like.shape)}")
        if not tensor.is_floating_point():
            raise ModelLoadError(f"{source}: weight {name} has dtype {tensor.dtype}, expected a floating point type")
    extra = sorted(set(mapped) - set(expected))
    if extra:
        raise ModelLoadError(f"{source}: weight {extra[0]} does not fit the config (layer count or options differ)")


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
