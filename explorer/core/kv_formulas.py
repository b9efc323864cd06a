"""KV-cache bytes of a traced model, by the formulas of `kv_variants`, from its `ModelInfo`.

Per token and per layer a decoder caches (DeepSeek-V2, Table 1):
MHA 2·n_heads·d_head, GQA 2·n_kv·d_head, MQA 2·d_head, MLA d_c + d_R, times the
bytes of the cache dtype. `kv_variants` holds those formulas for a config.json;
this module only translates the trace's `ModelInfo` into its `CacheShape`, so the
KV panel and the `kv` command can never disagree. Numpy only.
"""
from __future__ import annotations

import numpy as np

from explorer.core import kv_variants
from explorer.core.trace import ModelInfo


def cache_shape(info: ModelInfo) -> kv_variants.CacheShape:
    """The cache-deciding dimensions of a traced model (one translation, kept in kv_variants)."""
    return kv_variants.shape_from_info(info)


def cache_dtype(info: ModelInfo) -> str:
    """The dtype the cache is kept in (the compute dtype), as `kv_variants` names it."""
    name = str(info.dtype).removeprefix("torch.")
    return name if name in kv_variants.DTYPE_BYTES else "float32"


def bytes_per_token_per_layer(info: ModelInfo) -> int:
    """What one more token costs in one layer of this model's own cache."""
    native = kv_variants.native_variant(cache_shape(info))
    return native.elements_per_layer * kv_variants.dtype_bytes(cache_dtype(info))


def comparison(info: ModelInfo, tokens: int) -> list[kv_variants.VariantRow]:
    """The same model under MHA, every GQA, MQA and MLA, at the model's dtype and `tokens` tokens."""
    return kv_variants.compare(cache_shape(info), tokens=tokens, dtype=cache_dtype(info))


def block_fill(held: np.ndarray, block_size: int) -> np.ndarray:
    """Fill fraction of every block of every layer: (L, max_blocks), 0 where unallocated."""
    held = np.asarray(held, dtype=np.int64)
    n_blocks = int(-(-held.max() // block_size)) if held.size and held.max() > 0 else 0
    starts = np.arange(n_blocks) * block_size                              # (B,)
    filled = np.clip(held[:, None] - starts[None, :], 0, block_size)       # (L, B)
    return filled / float(block_size)
