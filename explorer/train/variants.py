"""The four attention variants as Hugging Face configs that differ only in attention.

Shared shape: 4 layers, d_model 192, 6 query heads of d_head 32, a 256-token
context, tied embeddings, RMSNorm and a SwiGLU FFN. What changes:

    MHA  N_KV = 6 key/value heads                      KV per token per layer: 2·N_KV·d_head = 384
    GQA  N_KV = 2 (3 query heads share each K/V head)  2·2·32 = 128
    MQA  N_KV = 1 (all query heads share one K/V)      2·1·32 = 64
    MLA  a d_c = 64 latent plus a d_R = 16 RoPE key    d_c + d_R = 80
         (DeepSeek-V2/V3 multi-head latent attention; K and V are rebuilt per head from the latent)

(numbers are elements; times 2 bytes in float16, 4 in float32). Attention with
fewer parameters gets a wider FFN (`intermediate_size`) so that all four carry
the same parameter budget within 1%.
"""
from __future__ import annotations

from transformers import DeepseekV3Config, LlamaConfig, PretrainedConfig

from explorer.core.attention_kinds import ATTENTION_KINDS
from explorer.core.kv_variants import cache_shape, native_variant

LAYERS = 4
D_MODEL = 192
HEADS = 6
D_HEAD = D_MODEL // HEADS
CONTEXT = 256
ROPE_THETA = 10000.0
MLA_LATENT = 64        # d_c, kv_lora_rank
MLA_ROPE_DIM = 16      # d_R, qk_rope_head_dim: the decoupled RoPE key shared by all heads

# Widths chosen so each variant lands within 1% of MHA's parameter count
# (checked by tests/core/test_bundled_models.py and test_train.py).
# N_KV per variant; which kind a head count makes is attention_kinds.attention_kind's to say (tested).
KV_HEADS = {"mha": HEADS, "gqa": 2, "mqa": 1}
FFN_WIDTH = {"mha": 512, "gqa": 597, "mqa": 619, "mla": 539}


def model_config(attention: str, vocab_size: int, end_of_text_id: int = 0) -> PretrainedConfig:
    """The transformers config of one variant; all other hyperparameters are shared."""
    if attention not in ATTENTION_KINDS:
        raise ValueError(f"attention must be one of {', '.join(ATTENTION_KINDS)}, not {attention!r}")
    shared = dict(
        vocab_size=vocab_size, hidden_size=D_MODEL, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, intermediate_size=FFN_WIDTH[attention],
        max_position_embeddings=CONTEXT, tie_word_embeddings=True, rms_norm_eps=1e-5,
        initializer_range=0.02, hidden_act="silu", attention_bias=False,
        bos_token_id=end_of_text_id, eos_token_id=end_of_text_id,
        rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA},
    )
    if attention == "mla":
        return DeepseekV3Config(
            **shared, num_key_value_heads=HEADS,
            q_lora_rank=None, kv_lora_rank=MLA_LATENT,
            qk_rope_head_dim=MLA_ROPE_DIM, qk_nope_head_dim=D_HEAD, v_head_dim=D_HEAD,
            # Every layer dense (no MoE): the expert fields are placeholders nothing reads.
            first_k_dense_replace=LAYERS, n_routed_experts=1, n_shared_experts=1,
            num_experts_per_tok=1, n_group=1, topk_group=1,
            num_nextn_predict_layers=0, rope_interleave=False,
        )
    return LlamaConfig(**shared, num_key_value_heads=KV_HEADS[attention], head_dim=D_HEAD, mlp_bias=False)


def kv_elements_per_token_per_layer(config: dict) -> int:
    """Cache elements one token adds to one layer under the config's own variant, as the KV table counts them:
    2·N_KV·d_head for MHA, GQA and MQA (a key and a value per K/V head), d_c + d_R for MLA (DeepSeek's absorbed
    form: the latent and the shared RoPE key). Its kind is attention_kinds.attention_kind's, read by the engine."""
    return native_variant(cache_shape(config)).elements_per_layer
