"""Checkpoint weight names -> ours, one declarative table per family, held by the family's row itself
(families.ModelFamily.weights for safetensors, .gguf_weights for GGUF). Plain strings and small frozen
values, no torch: the row, which the numpy-only views read, holds the tables, and weights.py (torch) applies
them. Anchor: gpt-fast's WEIGHT_MAP (scripts/convert_hf_checkpoint.py).

A safetensors rule maps one Hugging Face name pattern (`{i}` = layer, `{p}` = weight|bias) to one or more of
our names and the Layout of the checkpoint tensor that holds them: GPT-2's Conv1D stores W transposed and
fuses Q, K, V; Phi-3 fuses qkv and gate|up; transformers 5 fuses each expert's gate and up projections.
weights.split cuts such a tensor into our parts at load; weights.join puts them back for save_hf.

A GGUF rule maps one llama.cpp tensor name (`{i}` = block) to the Hugging Face name a transformers
checkpoint gives it, so a GGUF file then goes through the safetensors table of its family.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    """How one checkpoint tensor holds our weights: `pieces` parts cut along `dim` (equal ones, or with
    `first_square` Phi-3's Q | K | V: the first part has as many rows as the tensor has columns, the others
    share the rest equally), each stored transposed where `transposed` (a Conv1D's (in, out) weight; a
    1-D bias is kept as it is). Layout() is the tensor as it stands."""

    pieces: int = 1
    dim: int = 0
    transposed: bool = False
    first_square: bool = False


SAME = Layout()
# GPT-2's Conv1D stores W as (in, out): W^T of a Linear weight.
TRANSPOSED = Layout(transposed=True)
# GPT-2 c_attn: (d, 3d) weight or (3d,) bias -> W^Q, W^K, W^V as (d, d) Linear weights.
CONV1D_QKV = Layout(3, -1, transposed=True)
# Stacked experts (E, 2 d_ff, d) -> W_gate, W_up, each (E, d_ff, d).
EXPERTS_GATE_UP = Layout(2, 1)
# Phi-3 qkv_proj ((N_Q + 2 N_KV) d_h, d) -> W^Q (N_Q d_h rows), W^K and W^V (N_KV d_h rows each), as
# transformers' Phi3Attention slices it. There d_h = d / N_Q (Phi3Config names no head_dim), so W^Q has as
# many rows as the tensor has columns; a config whose N_Q d_h is not d fails validate's shape check.
PHI3_QKV = Layout(3, 0, first_square=True)
# Phi-3 gate_up_proj (2 d_ff, d) -> W_gate, W_up (transformers: gate, up = (x W^T).chunk(2, dim=-1)).
PHI3_GATE_UP = Layout(2, 0)


# Hugging Face state_dict name -> (our names,) or ((our names), Layout); a rule naming no Layout is SAME.
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

# Gemma 2 names its sandwich norms as Gemma 3 does; Gemma 3's q_norm and k_norm are in neither a Gemma 2
# checkpoint nor the model its config builds (qk_norm off), so the one table maps both.
GEMMA3 = {
    **DENSE,
    "model.layers.{i}.post_attention_layernorm.weight": ("layers.{i}.post_attn_norm.weight",),
    "model.layers.{i}.pre_feedforward_layernorm.weight": ("layers.{i}.ffn_norm.weight",),
    "model.layers.{i}.post_feedforward_layernorm.weight": ("layers.{i}.post_ffn_norm.weight",),
}

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


# GGUF tensor name (with {i} for the block) -> Hugging Face state_dict name.
_GGUF_COMMON = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.attn_q.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "blk.{i}.attn_k.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "blk.{i}.attn_v.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.ffn_gate.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
}
GGUF_LLAMA = {
    **_GGUF_COMMON,
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
}
# Gemma 2 and 3: the sandwich norms (and Gemma 3's q_norm and k_norm).
GGUF_GEMMA3 = {
    **_GGUF_COMMON,
    "blk.{i}.attn_q_norm.weight": "model.layers.{i}.self_attn.q_norm.weight",
    "blk.{i}.attn_k_norm.weight": "model.layers.{i}.self_attn.k_norm.weight",
    "blk.{i}.post_attention_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.pre_feedforward_layernorm.weight",
    "blk.{i}.post_ffw_norm.weight": "model.layers.{i}.post_feedforward_layernorm.weight",
}
# Phi-3 keeps transformers' fused projections: attn_qkv = Q | K | V, ffn_up = gate | up.
GGUF_PHI3 = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.attn_qkv.weight": "model.layers.{i}.self_attn.qkv_proj.weight",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.gate_up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
}
