"""The legal values of every config.json field the engine reads: one table of rules, checked before a
model is built, so that a degenerate value is refused in one sentence instead of running to NaN.

`FIELDS` gives each key its kind and range (finite, positive where a division or a logarithm needs it);
`ROPE_FIELDS` the same for a rope_scaling / rope_parameters dict; `AGREEMENTS` the rules between fields
(N_KV divides N_Q, topk_group <= n_group, llama3's low_freq_factor < high_freq_factor). A key that is
absent is not checked here: the family's reader gives it a legal default. `names` maps a config key to
the name the file itself uses (a GGUF metadata key), so that the sentence names what the user can find.
`BOUNDS` holds the read ModelConfig's sizes within those of any published model (`check_bounds`).
Torch-free.
"""
from __future__ import annotations

from explorer.core.activation_names import ACTIVATION_NAMES
from explorer.core.config_rules import (
    CONTEXT,
    HEADS,
    LAYERS,
    TOKEN_ID,
    VOCABULARY,
    WIDTH,
    Rule,
    check_table,
    count,
    legal,
    positive,
    refuse,
)
from explorer.core.errors import InvalidConfigError, UnsupportedModelError
from explorer.core.families import FAMILIES

FIELDS = {
    "hidden_size": count(high=WIDTH), "intermediate_size": count(0), "num_hidden_layers": count(high=LAYERS),
    "num_attention_heads": count(high=HEADS), "num_key_value_heads": count(nullable=True, high=HEADS),
    "head_dim": count(nullable=True, high=1 << 14),
    "vocab_size": count(0, high=VOCABULARY),   # 0: the KV table (kv_variants) reads configs without a vocabulary
    "max_position_embeddings": count(high=CONTEXT), "n_embd": count(high=WIDTH), "n_head": count(high=HEADS),
    "n_layer": count(high=LAYERS), "n_inner": count(nullable=True), "n_positions": count(high=CONTEXT),
    "rms_norm_eps": positive(), "layer_norm_eps": positive(), "layer_norm_epsilon": positive(),
    "rope_theta": positive(), "rope_local_base_freq": positive(), "partial_rotary_factor": positive(high=1.0),
    "query_pre_attn_scalar": positive(), "sliding_window": count(nullable=True), "max_window_layers": count(0),
    "sliding_window_pattern": count(nullable=True),
    "attn_logit_softcapping": positive(nullable=True), "final_logit_softcapping": positive(nullable=True),
    "hidden_act": Rule("choice", choices=ACTIVATION_NAMES),
    "hidden_activation": Rule("choice", choices=ACTIVATION_NAMES, nullable=True),
    "activation_function": Rule("choice", choices=ACTIVATION_NAMES),
    "tie_word_embeddings": Rule("bool"), "attention_bias": Rule("bool"), "mlp_bias": Rule("bool"),
    "use_sliding_window": Rule("bool", nullable=True),
    "bos_token_id": TOKEN_ID, "eos_token_id": TOKEN_ID,
    "q_lora_rank": count(nullable=True), "kv_lora_rank": count(high=1 << 16), "qk_nope_head_dim": count(0),
    "qk_rope_head_dim": count(), "v_head_dim": count(), "n_routed_experts": count(0, nullable=True, high=1 << 13),
    "n_shared_experts": count(0, nullable=True), "num_experts_per_tok": count(0, nullable=True, high=1 << 13),
    "moe_intermediate_size": count(0, nullable=True), "first_k_dense_replace": count(0, nullable=True, high=LAYERS),
    "routed_scaling_factor": positive(nullable=True), "n_group": count(nullable=True, high=1 << 13),
    "topk_group": count(nullable=True, high=1 << 13),
    "type_vocab_size": count(high=1 << 16),    # BERT's segment embeddings (2 in every published BERT)
}
ROPE_FIELDS = {
    "rope_theta": positive(), "factor": positive(nullable=True), "low_freq_factor": positive(),
    "high_freq_factor": positive(), "original_max_position_embeddings": count(nullable=True),
    "beta_fast": positive(nullable=True), "beta_slow": positive(nullable=True), "mscale": Rule("real", nullable=True),
    "mscale_all_dim": Rule("real", nullable=True), "attention_factor": positive(nullable=True),
    "partial_rotary_factor": positive(high=1.0),
}


def check_field(key: str, value, names: dict | None = None) -> None:
    """InvalidConfigError if one config.json key's value is outside its FIELDS rule (a GGUF reader's typed getter)."""
    rule = FIELDS.get(key)
    wanted = None if rule is None else legal(rule, value)
    if wanted is not None:
        raise refuse(key, value, wanted, names or {})


def _rope_dicts(config: dict) -> list[tuple[str, dict]]:
    """Every rope parameter dict: rope_scaling, rope_parameters, or rope_parameters per layer type."""
    found = []
    for key in ("rope_scaling", "rope_parameters"):
        params = config.get(key)
        if params is None:
            continue
        if not isinstance(params, dict):
            raise refuse(key, params, "an object of RoPE parameters or null", {})
        nested = {k: v for k, v in params.items() if k.endswith("_attention")}
        found += [(f"{key}.{k}.", v) for k, v in nested.items() if isinstance(v, dict)] or [(f"{key}.", params)]
    return found


def _int(config: dict, key: str, default: int = 0) -> int:
    value = config.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _rotary_factor(config: dict) -> float:
    """The fraction of each head RoPE rotates (top level, or inside a rope dict as transformers 5 writes it)."""
    factors = [config.get("partial_rotary_factor")] + [p.get("partial_rotary_factor") for _, p in _rope_dicts(config)]
    return min((float(f) for f in factors if f is not None), default=1.0)


def _rotary(config: dict) -> bool:
    """Whether the family places positions by RoPE (its row's `positional`); a model_type with no row is checked."""
    row = FAMILIES.get(str(config.get("model_type") or ""))
    return row is None or row.positional == "rope"


# (the keys a rule reads, whether the values agree, what the sentence says) -- read on the raw dict.
AGREEMENTS = (
    (("num_attention_heads", "num_key_value_heads"),
     lambda c: not c.get("num_key_value_heads") or _int(c, "num_attention_heads") % _int(c, "num_key_value_heads") == 0,
     "the {1} key/value heads must divide the {0} query heads"),
    (("hidden_size", "num_attention_heads"),
     lambda c: (c.get("head_dim") or c.get("kv_lora_rank")
                or _int(c, "hidden_size") % _int(c, "num_attention_heads", 1) == 0),
     "the {1} heads must divide hidden_size {0} (or head_dim be given)"),
    (("topk_group", "n_group"), lambda c: _int(c, "topk_group", 1) <= _int(c, "n_group", 1),
     "topk_group {0} must be at most n_group {1}"),
    (("n_routed_experts", "n_group"),
     lambda c: not _int(c, "n_routed_experts") or _int(c, "n_routed_experts") % _int(c, "n_group", 1) == 0,
     "the {0} routed experts must split evenly into n_group {1}"),
    (("partial_rotary_factor", "head_dim"), lambda c: not _rotary(c) or _rotary_factor(c) == 1.0,
     "partial_rotary_factor {0} rotates only part of each head, which the supported families never do (1 is legal)"),
)


def _check_llama3(prefix: str, params: dict, names: dict) -> None:
    kind = params.get("rope_type", params.get("type"))
    if kind == "llama3" and not params.get("low_freq_factor", 1.0) < params.get("high_freq_factor", 4.0):
        low = prefix + "low_freq_factor"
        raise InvalidConfigError(
            f"{names.get(low, low)} = {params.get('low_freq_factor', 1.0)}"
            f" must be below high_freq_factor = {params.get('high_freq_factor', 4.0)} for llama3 RoPE scaling.")


def check_config(config: dict, names: dict | None = None) -> None:
    """InvalidConfigError naming the first field of a config.json dict outside FIELDS, ROPE_FIELDS or AGREEMENTS."""
    names = names or {}
    check_table(config, FIELDS, names)
    for prefix, params in _rope_dicts(config):
        check_table(params, ROPE_FIELDS, names, prefix)
        _check_llama3(prefix, params, names)
    for keys, agree, says in AGREEMENTS:
        if not agree(config):
            values = [config.get(k, "(default)") for k in keys]
            raise InvalidConfigError(f"{names.get(keys[0], keys[0])}: " + says.format(*values) + ".")


# Far past every published model (Llama 3.1 405B: 126 layers and d_model 16,384; DeepSeek V3: 256 experts;
# Gemma 3: a 262k vocabulary; Llama 4: a 10M context): a config beyond them is broken or hostile, and is
# refused before anything is built from it. field -> (config.json key, lowest, highest).
BOUNDS = {
    "n_layers": ("num_hidden_layers", 1, LAYERS), "d_model": ("hidden_size", 1, WIDTH),
    "n_heads": ("num_attention_heads", 1, HEADS), "n_kv_heads": ("num_key_value_heads", 1, HEADS),
    "d_head": ("head_dim", 1, 1 << 14), "d_ff": ("intermediate_size", 0, 1 << 20),
    "vocab_size": ("vocab_size", 0, VOCABULARY), "max_positions": ("max_position_embeddings", 1, CONTEXT),
    "n_routed_experts": ("n_routed_experts", 0, 1 << 13), "experts_per_token": ("num_experts_per_tok", 0, 1 << 13),
    "moe_d_ff": ("moe_intermediate_size", 0, 1 << 20), "kv_lora_rank": ("kv_lora_rank", 0, 1 << 16),
}


def check_bounds(config) -> None:
    """UnsupportedModelError naming the first size of a ModelConfig outside BOUNDS (or top-k above the experts)."""
    for name, (key, low, high) in BOUNDS.items():
        value = getattr(config, name)
        if not low <= value <= high:
            raise UnsupportedModelError(
                f"the config says {key} = {value}, outside the {low} to {high:,} of any supported model.")
    if config.experts_per_token > max(config.n_routed_experts, 0) and config.n_routed_experts:
        raise UnsupportedModelError(f"the config routes each token to {config.experts_per_token} experts "
                                    f"but has only {config.n_routed_experts}.")


def check_runnable(config) -> None:
    """InvalidConfigError for a ModelConfig that is to be built and run but has no vocabulary, or a dense layer
    with no FFN width: FIELDS allows 0 for both, as the KV table reads a config alone (kv_variants.CACHE_FREE);
    unrefused, the weights' shapes disagreed in a sentence of internal names."""
    if config.vocab_size < 1:
        raise refuse("vocab_size", config.vocab_size, "at least 1 for a model to run", {})
    if config.d_ff < 1 and not all(config.is_moe_layer(layer) for layer in range(config.n_layers)):
        raise refuse("intermediate_size", config.d_ff, "at least 1 for a model with a dense FFN layer to run", {})
