"""ModelConfig: the numbers that fix a decoder-only transformer, read from a config.json dict.

One frozen dataclass for every family; a family is a table row of choices
(norm, activation, positions, attention kind), never a separate model.
`ModelConfig.from_hf` reads a config.json dict by its family's row: the row's reader
(config_readers.py, transformers-4 and -5 styles) gives the numbers, the row its own facts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from explorer.core.attention_kinds import attention_kind  # the rule, read here and by kv_variants
from explorer.core.config_readers import RopeSpec
from explorer.core.config_schema import check_bounds, check_config
from explorer.core.errors import UnsupportedModelError
from explorer.core.families import FAMILIES, ModelFamily, text_config


@dataclass(frozen=True)
class ModelConfig:
    """Everything the blocks need; names follow the notation of the app (d_model, N_Q, N_KV, d_qk)."""

    family: str                        # its row in families.FAMILIES: "llama", "gemma", "gemma2", "gemma3", "gpt2", ...
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int                       # N_Q
    n_kv_heads: int                    # N_KV (MLA: n_heads, keys are expanded per head)
    d_head: int                        # d_qk of dense attention
    d_ff: int
    max_positions: int
    norm: str = "rms"                  # "rms" | "rms_offset" (Gemma: x * (1 + w)) | "layer"
    norm_eps: float = 1e-6
    activation: str = "silu"           # key of model.ACTIVATIONS
    ffn: str = "gated"                 # "gated" (W_down(act(X W_gate) * X W_up)) | "mlp" (W_out act(X W_in))
    positional: str = "rope"           # "rope" | "learned"
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False              # RMSNorm on each head's q and k (Qwen3, Gemma 3)
    sandwich_norm: bool = False        # Gemma 2, 3: norms after attention and after the FFN too (the family's row)
    tie_embeddings: bool = False
    embed_scale: float = 1.0           # Gemma: sqrt(d_model)
    attn_scale: float = 0.0            # the factor in S = Q K^T * scale
    attn_scale_by_layer: bool = False  # GPT-2's scale_attn_by_inverse_layer_idx
    attn_softcap: float | None = None
    final_softcap: float | None = None
    layer_kinds: tuple[str, ...] = ()  # per layer: "causal" | "sliding"
    sliding_window: int | None = None
    rope: RopeSpec = field(default_factory=RopeSpec)
    rope_local: RopeSpec | None = None  # Gemma 3 sliding layers
    rope_interleave: bool = False       # rotate pairs (x0, x1), (x2, x3) instead of halves
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    # ----- Multi-head Latent Attention (DeepSeek V2/V3) -----
    mla: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int = 0              # d_c
    qk_nope_dim: int = 0
    qk_rope_dim: int = 0               # d_R
    v_head_dim: int = 0
    # ----- Mixture of experts (DeepSeek) -----
    n_routed_experts: int = 0
    n_shared_experts: int = 0
    experts_per_token: int = 0
    moe_d_ff: int = 0
    first_dense_layers: int = 0
    routed_scaling: float = 1.0
    router_score: str = "softmax"      # "softmax" (V2) | "sigmoid" (V3)
    router_groups: str = "greedy"      # "greedy" | "group_limited_greedy" (V2) | "noaux_tc" (V3)
    n_group: int = 1
    topk_group: int = 1
    norm_topk_prob: bool = False

    # ----- derived -----------------------------------------------------------
    @property
    def d_qk(self) -> int:
        return self.qk_nope_dim + self.qk_rope_dim if self.mla else self.d_head

    @property
    def d_v(self) -> int:
        return self.v_head_dim if self.mla else self.d_head

    @property
    def attention_kind(self) -> str:
        return attention_kind(self.n_heads, self.n_kv_heads, self.mla)

    def is_moe_layer(self, layer: int) -> bool:
        return self.n_routed_experts > 0 and layer >= self.first_dense_layers

    def scale_of_layer(self, layer: int) -> float:
        return self.attn_scale / (layer + 1) if self.attn_scale_by_layer else self.attn_scale

    @staticmethod
    def from_hf(d: dict) -> "ModelConfig":
        """Read a transformers config.json dict (transformers 4 or 5 style)."""
        d = text_config(d)                                     # a multimodal wrapper's language model
        model_type = str(d.get("model_type") or "")
        row = FAMILIES.get(model_type)
        if row is None or row.reader is None:
            names = ", ".join(sorted(name for name, row in FAMILIES.items() if row.reader))
            raise UnsupportedModelError(
                f"model_type {model_type!r} is not supported (supported: {names})")
        return read_checked(row, d, model_type)


def of_row(row: ModelFamily, fields: dict) -> ModelConfig:
    """The ModelConfig of a reader's `fields` (config_readers) with the facts of the family's row."""
    return ModelConfig(**fields, sandwich_norm=row.sandwich_norm, positional=row.positional)


def read_checked(row: ModelFamily, d: dict, model_type: str):
    """The config of `d` read by the row's reader, every value legal before any is used
    (config_schema.check_config) and every size within bounds (check_bounds); else one sentence."""
    check_config({**d, "model_type": model_type})
    try:
        config = row.reader({**row.defaults, **d})
        if isinstance(config, dict):                   # a config_readers reader's fields
            config = of_row(row, config)
    except (KeyError, TypeError, ValueError, OverflowError) as error:
        raise UnsupportedModelError(
            f"config of model_type {model_type!r} is incomplete or invalid: {error!r}") from None
    if isinstance(config, ModelConfig):
        check_bounds(config)
    return config


def bert_config(d: dict) -> ModelConfig:
    """ModelConfig of a transformers BertConfig dict (absolute positions only), as the encoder builds it, checked
    as every other family's (a config whose heads did not divide its width ended in a traceback; boundary27)."""
    return read_checked(FAMILIES["bert"], d, "bert")
