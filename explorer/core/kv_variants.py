"""What the KV cache holds under MHA, GQA, MQA and MLA, from a model's real dimensions.

Every attention variant exists to shrink the cache that decoding keeps per token
(the DeepSeek-V2 paper, Table 1, per token and per layer, in elements):

    MHA  2 · n_h · d_h        every query head has its own K and V
    GQA  2 · n_g · d_h        n_g K/V heads, each shared by n_h / n_g query heads
    MQA  2 · d_h              one K/V head shared by all
    MLA  d_c + d_R            a latent c_KV of rank d_c plus one decoupled RoPE key

A sliding-window layer (Mistral, Gemma 3's local layers) keeps at most W tokens,
so its bytes stop growing at W. A config.json is read by the engine's own
ModelConfig.from_hf, and nothing here imports torch: the table works for
models far too big to load. The paged model is PagedAttention's (Kwon et al.,
2023): each layer's cache is a list of fixed-size blocks, the last one partly
filled.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np

from explorer.core.config import ModelConfig, attention_kind
from explorer.core.errors import ModelLoadError, UnsupportedModelError
from explorer.core.families import FAMILIES
from explorer.core.units import human_bytes

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}
DEFAULT_BLOCK_SIZE = 16


@dataclass(frozen=True)
class CacheShape:
    """The dimensions of a model that decide its KV-cache size."""

    model_type: str
    n_layers: int
    n_heads: int                      # N_Q
    n_kv_heads: int                   # N_KV of the native variant (MLA: n_heads, expanded)
    d_k: int                          # per-head key width a K/V cache would hold (the paper's d_h)
    d_v: int                          # per-head value width
    windows: tuple[int | None, ...]   # per layer: None = full attention, W = sliding window
    max_positions: int
    rope: bool                        # whether keys carry RoPE (MLA then needs a decoupled d_R)
    mla_rank: int | None = None       # d_c of a native MLA model
    mla_rope_dim: int | None = None   # d_R of a native MLA model

    @property
    def layer_kinds(self) -> tuple[str, ...]:
        return tuple("full" if w is None else "sliding" for w in self.windows)

    @property
    def native(self) -> str:
        """The variant name this model was trained with."""
        if self.mla_rank is not None:
            return variant_name("mla", latent_rank=self.mla_rank)
        return variant_name(attention_kind(self.n_heads, self.n_kv_heads), self.n_kv_heads)

    def tokens_held(self, tokens: int) -> np.ndarray:
        """Tokens each layer's cache holds after `tokens` tokens: (L,) min(N, W_l)."""
        return np.array([tokens if w is None else min(tokens, w) for w in self.windows], dtype=np.int64)


@dataclass(frozen=True)
class Variant:
    """One way to cache K/V for this model, with its per-token width per layer."""

    name: str                 # "mha" | "gqa-<kv_heads>" | "mqa" | "mla-<rank>"
    kind: str                 # "mha" | "gqa" | "mqa" | "mla"
    kv_heads: int | None      # None for MLA, whose latent is shared by all heads
    elements_per_layer: int   # cached numbers per token per layer
    native: bool = False
    latent_rank: int | None = None   # d_c (MLA)
    rope_dim: int | None = None      # d_R (MLA)

    def bytes_per_token(self, shape: CacheShape, dtype: str) -> int:
        """Bytes one more token adds, summed over all layers (before any window fills)."""
        return self.elements_per_layer * shape.n_layers * dtype_bytes(dtype)

    def bytes_total(self, shape: CacheShape, tokens: int, dtype: str) -> int:
        """Bytes held after `tokens` tokens: sum over layers of min(N, W_l) · width."""
        held = int(shape.tokens_held(tokens).sum())
        return held * self.elements_per_layer * dtype_bytes(dtype)

    def bytes_curve(self, shape: CacheShape, tokens: np.ndarray, dtype: str) -> np.ndarray:
        """bytes_total at each entry of `tokens` (for a bytes-against-tokens plot)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        held = np.zeros_like(tokens)
        for window in shape.windows:
            held += tokens if window is None else np.minimum(tokens, window)
        return held * self.elements_per_layer * dtype_bytes(dtype)


@dataclass(frozen=True)
class VariantRow:
    """One line of the comparison table."""

    variant: Variant
    dtype: str
    tokens: int
    bytes_per_token: int
    bytes_total: int
    ratio_to_mha: float        # bytes_per_token / MHA's bytes_per_token

    def as_json(self) -> dict:
        return {"variant": self.variant.name, "kv_heads": self.variant.kv_heads,
                "bytes_per_token": self.bytes_per_token, "bytes_total": self.bytes_total,
                "native": self.variant.native}


@dataclass(frozen=True)
class PagedLayout:
    """A PagedAttention view of one variant's cache: per layer, fixed-size blocks."""

    block_size: int
    tokens_per_layer: np.ndarray    # (L,) tokens each layer holds
    blocks_per_layer: np.ndarray    # (L,) ceil(tokens / block_size)
    bytes_per_block: int            # one block of one layer
    bytes_per_slot: int             # one token of one layer

    @property
    def last_block_fill(self) -> np.ndarray:
        """Tokens in each layer's last block: (L,), 0 where a layer has no block."""
        rest = self.tokens_per_layer - (self.blocks_per_layer - 1) * self.block_size
        return np.where(self.blocks_per_layer > 0, rest, 0)

    @property
    def bytes_in_use(self) -> np.ndarray:
        return self.tokens_per_layer * self.bytes_per_slot

    @property
    def bytes_allocated(self) -> np.ndarray:
        return self.blocks_per_layer * self.bytes_per_block

    @property
    def fragmentation(self) -> float:
        """Internal fragmentation: the share of allocated slots that hold no token."""
        slots = int(self.blocks_per_layer.sum()) * self.block_size
        return 0.0 if slots == 0 else 1.0 - int(self.tokens_per_layer.sum()) / slots


def dtype_bytes(dtype: str) -> int:
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ModelLoadError(f"Unknown cache dtype {dtype!r}; choose one of {', '.join(DTYPE_BYTES)}.") from None


# ----- reading a config --------------------------------------------------------
# The shape comes from the ModelConfig the engine builds from the same config.json (config.py, numpy
# and torch free), so the table and the engine cannot read a family's window or heads differently.
NOT_CACHED = "an encoder-decoder (its KV table is not written yet)"
# Sizes the cache does not depend on: a config.json (or GGUF metadata) may leave them out here.
CACHE_FREE = {"vocab_size": 0, "intermediate_size": 0}


def cache_shape(config: dict, source: str = "the config") -> CacheShape:
    """The cache-relevant dimensions of a Hugging Face style config dict, read as the engine reads it."""
    model_type = str(config.get("model_type") or "")
    row = FAMILIES.get(model_type)
    if row is not None and row.cache == "cross":
        raise UnsupportedModelError(f"{source} has model_type {model_type!r}, {NOT_CACHED}.")
    try:
        model = ModelConfig.from_hf({**CACHE_FREE, **config})
    except UnsupportedModelError as error:
        raise UnsupportedModelError(f"The config of {source}: {str(error).rstrip('.')}.") from None
    if model.n_kv_heads <= 0 or model.n_heads % model.n_kv_heads:
        raise ModelLoadError(f"The config of {source} has {model.n_kv_heads} key/value heads, which do not divide "
                             f"{model.n_heads} query heads.")
    return shape_from_config(model)


def shape_from_config(config) -> CacheShape:
    """The cache shape of an engine ModelConfig: per-layer windows from its layer kinds, MLA's d_c and d_R."""
    windows = tuple(config.sliding_window if kind == "sliding" else None for kind in config.layer_kinds)
    rope = config.positional == "rope"
    if config.mla:
        # The paper's d_h is the per-head width without the decoupled RoPE part.
        return CacheShape(config.family, config.n_layers, config.n_heads, config.n_heads, config.qk_nope_dim,
                          config.v_head_dim, windows, config.max_positions, True,
                          mla_rank=config.kv_lora_rank, mla_rope_dim=config.qk_rope_dim)
    return CacheShape(config.family, config.n_layers, config.n_heads, config.n_kv_heads, config.d_head,
                      config.d_head, windows, config.max_positions, rope)


def shape_from_info(info) -> CacheShape:
    """The cache shape of a loaded model, from the trace's `ModelInfo` (no config file needed)."""
    windows = tuple(info.sliding_window if kind == "sliding" else None for kind in info.layer_kinds)
    if info.mla_rank is not None:
        rope = int(info.mla_rope_dim or 0)
        return CacheShape(info.family, info.n_layers, info.n_heads, info.n_heads, info.d_qk - rope, info.d_v,
                          windows, info.max_positions, True, mla_rank=info.mla_rank, mla_rope_dim=rope)
    return CacheShape(info.family, info.n_layers, info.n_heads, info.n_kv_heads, info.d_qk, info.d_v, windows,
                      info.max_positions, info.positional == "rope")


def cache_dtype(info) -> str:
    """The dtype a traced model keeps its cache in (its compute dtype), as DTYPE_BYTES names it."""
    name = str(info.dtype).removeprefix("torch.")
    return name if name in DTYPE_BYTES else "float32"


def bytes_per_token_per_layer(info) -> int:
    """What one more token costs in one layer of a traced model's own cache."""
    return native_variant(shape_from_info(info)).elements_per_layer * dtype_bytes(cache_dtype(info))


def info_comparison(info, tokens: int) -> list["VariantRow"]:
    """A traced model under MHA, every GQA, MQA and MLA, at its own dtype and `tokens` tokens."""
    return compare(shape_from_info(info), tokens=tokens, dtype=cache_dtype(info))


def block_fill(held: np.ndarray, block_size: int) -> np.ndarray:
    """Fill fraction of every block of every layer: (L, max_blocks), 0 where unallocated."""
    held = np.asarray(held, dtype=np.int64)
    n_blocks = int(-(-held.max() // block_size)) if held.size and held.max() > 0 else 0
    starts = np.arange(n_blocks) * block_size                              # (B,)
    filled = np.clip(held[:, None] - starts[None, :], 0, block_size)       # (L, B)
    return filled / float(block_size)


# ----- the variants ------------------------------------------------------------

def variant_name(kind: str, kv_heads: int | None = None, latent_rank: int | None = None) -> str:
    """The table's name of a variant of `kind` (config.attention_kind): GQA names its K/V head count and MLA
    its latent rank d_c, since a model has several of each; MHA and MQA are one variant each."""
    if kind == "gqa":
        return f"gqa-{kv_heads}"
    return f"mla-{latent_rank}" if kind == "mla" else kind


def default_ranks(shape: CacheShape) -> list[int]:
    """MLA latent ranks worth showing: 2, 4 (DeepSeek's choice d_c = 4 d_h) and 8 times d_h."""
    if shape.mla_rank is not None:
        return [shape.mla_rank]
    mha = shape.n_heads * (shape.d_k + shape.d_v)
    ranks = [m * shape.d_k for m in (2, 4, 8)]
    return [r for r in ranks if r + mla_rope_dim(shape) < mha] or [ranks[0]]


def mla_rope_dim(shape: CacheShape) -> int:
    """d_R: native where the model has MLA; d_h / 2 for RoPE models (as DeepSeek); 0 without RoPE."""
    if shape.mla_rope_dim is not None:
        return shape.mla_rope_dim
    return shape.d_k // 2 if shape.rope else 0


def variants(shape: CacheShape, ranks: list[int] | None = None) -> list[Variant]:
    """MHA, every GQA whose K/V head count divides n_heads, MQA, then MLA at each rank."""
    width = shape.d_k + shape.d_v
    native = shape.native
    out = []
    for kv_heads in sorted((g for g in range(1, shape.n_heads + 1) if shape.n_heads % g == 0), reverse=True):
        kind = attention_kind(shape.n_heads, kv_heads)
        name = variant_name(kind, kv_heads)
        out.append(Variant(name, kind, kv_heads, kv_heads * width, native=(name == native)))
    d_rope = mla_rope_dim(shape)
    chosen = set(default_ranks(shape) if ranks is None else ranks)
    if shape.mla_rank is not None:
        chosen.add(shape.mla_rank)
    for rank in sorted(chosen):
        if rank <= 0:
            raise ModelLoadError(f"MLA latent rank {rank} must be a positive number.")
        name = variant_name("mla", latent_rank=rank)
        out.append(Variant(name, "mla", None, rank + d_rope, native=(name == native),
                           latent_rank=rank, rope_dim=d_rope))
    return out


def conversion_rope_pairs(d_head: int, rope: bool) -> int:
    """RoPE pairs per K/V head an MLA conversion keeps rotated by default: d_h / 8 (a quarter of each
    head's dims, MHA2MLA's partial RoPE); none without RoPE."""
    return max(1, d_head // 8) if rope else 0


def conversion_rank_limit(n_kv_heads: int, d_head: int, d_model: int, rope_pairs: int, bias: bool = False) -> int:
    """The rank of the stacked [W^K_nope; W^V] (+ a bias column) an MLA conversion factorises: N_KV (2 d_h - 2m)
    rows by d_model (+1) columns. A latent wider than this holds nothing more."""
    rows = n_kv_heads * (2 * d_head - 2 * rope_pairs)
    return min(rows, d_model + (1 if bias else 0))


def conversion_work(n_kv_heads: int, kv_heads: int | None) -> str:
    """What the what-if conversion (explorer.core.convert) does to each layer's K/V projections to go from
    `n_kv_heads` K/V heads to `kv_heads` (None: MLA's latent), the words its progress and docs use. More heads
    copy each K/V head to the query heads that read it (exact); fewer average each group's (GQA, section 2.1)."""
    if kv_heads is None:
        return "low-rank factoring K/V (SVD)"
    if kv_heads % n_kv_heads == 0:
        return "replicating K/V heads" if kv_heads > n_kv_heads else "copying K/V heads"
    return "mean-pooling K/V heads" if n_kv_heads % kv_heads == 0 else "replicating and mean-pooling K/V heads"


def cache_change(original_bytes: int, converted_bytes: int) -> str:
    """The converted model's cache beside the original's, never a negative saving: "cache saved X",
    "cache grows by X" (MHA from GQA) or "cache unchanged"."""
    saved = int(original_bytes) - int(converted_bytes)
    if saved == 0:
        return "cache unchanged"
    return f"cache saved {human_bytes(saved)}" if saved > 0 else f"cache grows by {human_bytes(-saved)}"


def compare(shape: CacheShape, tokens: int | None = None, dtype: str = "bfloat16",
            ranks: list[int] | None = None) -> list[VariantRow]:
    """The comparison table: every variant's bytes per token and for `tokens` tokens."""
    tokens = shape.max_positions if tokens is None else int(tokens)
    if tokens < 0:
        raise ModelLoadError(f"Token count {tokens} must not be negative.")
    rows = []
    all_variants = variants(shape, ranks)
    mha = all_variants[0].bytes_per_token(shape, dtype)
    for variant in all_variants:
        per_token = variant.bytes_per_token(shape, dtype)
        rows.append(VariantRow(variant, dtype, tokens, per_token,
                               variant.bytes_total(shape, tokens, dtype), per_token / mha))
    return rows


def native_variant(shape: CacheShape) -> Variant:
    return next(v for v in variants(shape) if v.native)


def paged_layout(shape: CacheShape, variant: Variant, tokens: int, dtype: str,
                 block_size: int = DEFAULT_BLOCK_SIZE) -> PagedLayout:
    """Blocks per layer = ceil(tokens held / block size); sliding layers hold at most W."""
    if block_size <= 0:
        raise ModelLoadError(f"Block size {block_size} must be a positive number of tokens.")
    held = shape.tokens_held(int(tokens))
    blocks = -(-held // block_size)   # ceil
    slot = variant.elements_per_layer * dtype_bytes(dtype)
    return PagedLayout(block_size, held, blocks, slot * block_size, slot)


# ----- presentation --------------------------------------------------------------

HEADER = ("variant", "kv_heads", "elements_per_token_per_layer", "bytes_per_token",
          "tokens", "bytes_total", "ratio_to_mha", "native")


def table_records(rows: list[VariantRow]) -> list[tuple]:
    return [(r.variant.name, "" if r.variant.kv_heads is None else r.variant.kv_heads,
             r.variant.elements_per_layer, r.bytes_per_token, r.tokens, r.bytes_total,
             round(r.ratio_to_mha, 6), r.variant.native) for r in rows]


def to_csv(rows: list[VariantRow]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(table_records(rows))
    return buffer.getvalue()


def format_table(shape: CacheShape, rows: list[VariantRow], name: str = "") -> str:
    """A plain-text table for the terminal, the native variant marked with *."""
    dtype, tokens = rows[0].dtype, rows[0].tokens
    kinds = shape.layer_kinds
    n_sliding = kinds.count("sliding")
    layers = f"{shape.n_layers} layers" + (
        f" ({n_sliding} sliding W={next(w for w in shape.windows if w)}, {len(kinds) - n_sliding} full)"
        if n_sliding else "")
    lines = [f"{name or shape.model_type}: {layers}, {shape.n_heads} heads, d_h={shape.d_k}, "
             f"{tokens} tokens at {dtype}",
             f"  {'variant':<10}{'kv heads':>9}{'elem/tok/layer':>16}{'bytes/token':>14}"
             f"{'total':>14}{'vs MHA':>9}"]
    for r in rows:
        mark = "*" if r.variant.native else " "
        heads = "-" if r.variant.kv_heads is None else str(r.variant.kv_heads)
        lines.append(f"{mark} {r.variant.name:<10}{heads:>9}{r.variant.elements_per_layer:>16}"
                     f"{human_bytes(r.bytes_per_token):>14}{human_bytes(r.bytes_total):>14}"
                     f"{r.ratio_to_mha:>9.4f}")
    lines.append("* the model's own variant")
    return "\n".join(lines)
