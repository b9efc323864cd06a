"""The attention kinds and the rule that names a model's: MHA, MQA, GQA (by their K/V head count) or MLA.

Torch-free and import-free, so that the command-line parser can offer the kinds without loading the engine.
"""
from __future__ import annotations

ATTENTION_KINDS = ("mha", "mqa", "gqa", "mla")         # every name attention_kind returns


def attention_kind(n_heads: int, n_kv_heads: int, latent: bool = False) -> str:
    """MLA where K and V come from a latent c_KV (DeepSeek-V2); else MHA (N_KV = N_Q), MQA (N_KV = 1, Shazeer
    2019) or GQA (1 < N_KV < N_Q, Ainslie et al. 2023)."""
    if latent:
        return "mla"
    if n_kv_heads == n_heads:
        return "mha"
    return "mqa" if n_kv_heads == 1 else "gqa"
