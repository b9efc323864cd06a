"""Preallocated KV caches, one per layer, with their real memory.

- `HeadCache`: K and V per K/V head, (N_KV, capacity, d) each, written by index
  (gpt-fast's KVCache.update). MHA, GQA and MQA differ only in N_KV. K is laid
  out by columns, as K^T (N_KV, d, capacity), so that Q K^T reads plain rows.
- `SlidingCache`: a ring of W slots; position p lives in slot p mod W.
- `LatentCache` (MLA): only the normed latent c_KV (capacity, d_c) and the
  RoPE key k_R (capacity, d_R), the memory DeepSeek-V2 is designed to save.

`update` writes the new entries and returns everything a query may see, in
position order, with the absolute position of each entry.
"""
from __future__ import annotations

import numpy as np
import torch


class LayerCache:
    """Common bookkeeping: how many tokens were written, and bytes per token."""

    def __init__(self, tensors_per_token: list[tuple[int, ...]], capacity: int, max_capacity: int,
                 dtype: torch.dtype, device: torch.device | str, transposed: tuple[bool, ...] = ()):
        self.entry_shapes = tensors_per_token          # per stored tensor: its per-token shape
        self.transposed = transposed or (False,) * len(tensors_per_token)  # per tensor: stored as (N, d, capacity)
        self.capacity, self.max_capacity = capacity, max_capacity
        self.dtype, self.device = dtype, torch.device(device)
        self.length = 0                                 # tokens fed so far (absolute)
        self.buffers = [self._empty(shape, capacity, t) for shape, t in zip(tensors_per_token, self.transposed)]
        element = torch.empty((), dtype=dtype).element_size()
        self.bytes_per_token = sum(int(np.prod(shape)) for shape in tensors_per_token) * element

    def _empty(self, shape: tuple[int, ...], capacity: int, transposed: bool = False) -> torch.Tensor:
        """Uninitialised: only written slots are ever read, and untouched memory costs no time
        (zero-filling SmolLM2's full context took half a second of the app's start).

        `transposed`: the memory holds (N, d, capacity) and the buffer is its (N, capacity, d) view,
        so that the first n_kv entries, transposed back, are n_kv-long rows: K^T for S = Q K^T,
        which the CPU's batched matmul multiplies about twice as fast as a transposed K.
        """
        if len(shape) == 2:                             # per head: (N, capacity, d)
            if transposed:
                return torch.empty(shape[0], shape[1], capacity, dtype=self.dtype, device=self.device).transpose(1, 2)
            return torch.empty(shape[0], capacity, shape[1], dtype=self.dtype, device=self.device)
        return torch.empty(capacity, shape[0], dtype=self.dtype, device=self.device)  # (capacity, d)

    @property
    def bytes_allocated(self) -> int:
        return self.capacity * self.bytes_per_token

    def held(self, length: int | None = None) -> int:
        """Tokens the cache holds after `length` tokens were fed."""
        return self.length if length is None else length

    def bytes_in_use(self, length: int | None = None) -> int:
        return self.held(length) * self.bytes_per_token

    def truncate(self, length: int) -> bool:
        """Forget tokens from `length` on; False if the cache can no longer rebuild that state."""
        self.length = min(self.length, length)
        return True

    def reset(self) -> None:
        self.length = 0

    def _grow(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        capacity = min(self.max_capacity, max(needed, 2 * self.capacity))
        grown = []
        for shape, transposed, old in zip(self.entry_shapes, self.transposed, self.buffers):
            new = self._empty(shape, capacity, transposed)
            new[..., : self.capacity, :].copy_(old) if len(shape) == 2 else new[: self.capacity].copy_(old)
            grown.append(new)
        self.buffers, self.capacity = grown, capacity

    def _positions(self, start: int, stop: int) -> np.ndarray:
        return np.arange(start, stop, dtype=np.int64)


class HeadCache(LayerCache):
    """K and V of every K/V head: (N_KV, capacity, d_qk) and (N_KV, capacity, d_v)."""

    def __init__(self, n_kv_heads: int, d_qk: int, d_v: int, capacity: int, max_capacity: int, dtype, device):
        super().__init__([(n_kv_heads, d_qk), (n_kv_heads, d_v)], capacity, max_capacity, dtype, device,
                         transposed=(True, False))                                       # K kept as K^T

    def update(self, k: torch.Tensor, v: torch.Tensor):
        """k: (N_KV, n_new, d_qk), v: (N_KV, n_new, d_v) -> all keys, values and their positions."""
        start, stop = self.length, self.length + k.shape[1]
        self._grow(stop)
        keys, values = self.buffers
        keys[:, start:stop] = k
        values[:, start:stop] = v
        self.length = stop
        return keys[:, :stop], values[:, :stop], self._positions(0, stop)  # (N_KV, n_kv, d)


class SlidingCache(LayerCache):
    """A ring of W slots per K/V head: position p is kept in slot p mod W."""

    def __init__(self, n_kv_heads: int, d_qk: int, d_v: int, window: int, max_capacity: int, dtype, device):
        self.window = window
        capacity = min(window, max_capacity)
        super().__init__([(n_kv_heads, d_qk), (n_kv_heads, d_v)], capacity, capacity, dtype, device,
                         transposed=(True, False))                                       # K kept as K^T
        self.oldest_kept = 0                            # no position below this can be rebuilt

    def held(self, length: int | None = None) -> int:
        return min(self.length if length is None else length, self.capacity)

    def update(self, k: torch.Tensor, v: torch.Tensor):
        n_new, start = k.shape[1], self.length
        stop = start + n_new
        if stop <= self.capacity:                       # the ring has not wrapped: slot == position
            keys, values = self.buffers
            keys[:, start:stop], values[:, start:stop] = k, v
            self.length = stop
            return keys[:, :stop], values[:, :stop], self._positions(0, stop)
        past_keys, past_values, past_positions = self.ordered()
        keys = torch.cat((past_keys, k), dim=1)          # (N_KV, held + n_new, d_qk)
        values = torch.cat((past_values, v), dim=1)
        positions = np.concatenate((past_positions, self._positions(start, stop)))
        kept = min(n_new, self.capacity)
        slots = torch.arange(stop - kept, stop, device=self.device) % self.capacity
        self.buffers[0][:, slots] = k[:, n_new - kept:]
        self.buffers[1][:, slots] = v[:, n_new - kept:]
        self.length = stop
        self.oldest_kept = stop - self.capacity
        return keys, values, positions

    def ordered(self):
        """The held entries in position order: keys, values, positions."""
        held = self.held()
        first = self.length - held
        if self.length <= self.capacity:
            keys, values = self.buffers
            return keys[:, :held], values[:, :held], self._positions(0, held)
        slots = torch.arange(first, self.length, device=self.device) % self.capacity
        return self.buffers[0][:, slots], self.buffers[1][:, slots], self._positions(first, self.length)

    def truncate(self, length: int) -> bool:
        # A query at position `length` needs positions length-W+1 .. length-1 still in the ring.
        if self.oldest_kept == 0:
            possible = True
        else:
            possible = length > self.capacity and length - self.capacity + 1 >= self.oldest_kept
        self.length = min(self.length, length)
        return possible

    def reset(self) -> None:
        self.length, self.oldest_kept = 0, 0


class LatentCache(LayerCache):
    """MLA: the normed latent c_KV (capacity, d_c) and the RoPE key k_R (capacity, d_R), shared by all heads."""

    def __init__(self, latent_rank: int, rope_dim: int, capacity: int, max_capacity: int, dtype, device):
        super().__init__([(latent_rank,), (rope_dim,)], capacity, max_capacity, dtype, device)

    def update(self, latent: torch.Tensor, k_rope: torch.Tensor):
        """latent: (n_new, d_c), k_rope: (n_new, d_R) -> all latents, RoPE keys and positions."""
        start, stop = self.length, self.length + latent.shape[0]
        self._grow(stop)
        latents, rope_keys = self.buffers
        latents[start:stop] = latent
        rope_keys[start:stop] = k_rope
        self.length = stop
        return latents[:stop], rope_keys[:stop], self._positions(0, stop)


class LayerCaches:
    """The caches of a model's layers, filled together: tokens fed so far and bytes per layer."""

    def __init__(self, layers: list[LayerCache]):
        self.layers = layers

    @property
    def length(self) -> int:
        return self.layers[0].length if self.layers else 0

    def truncate(self, length: int) -> bool:
        """Drop every token from `length` on; False if a sliding ring lost what it would need."""
        return all([layer.truncate(length) for layer in self.layers])

    def reset(self) -> None:
        for layer in self.layers:
            layer.reset()

    def bytes_in_use(self, length: int | None = None) -> list[int]:
        return [layer.bytes_in_use(length) for layer in self.layers]

    def bytes_allocated(self) -> list[int]:
        return [layer.bytes_allocated for layer in self.layers]


class KVCache(LayerCaches):
    """The per-layer caches of one decoder-only model (a table from layer kind to cache class)."""

    def __init__(self, config, capacity: int, dtype: torch.dtype, device):
        self.max_positions = config.max_positions
        capacity = max(1, min(capacity, config.max_positions))
        super().__init__([_layer_cache(config, kind, capacity, dtype, device) for kind in config.layer_kinds])


def _layer_cache(config, kind: str, capacity: int, dtype, device) -> LayerCache:
    if config.mla:
        return LatentCache(config.kv_lora_rank, config.qk_rope_dim, capacity, config.max_positions, dtype, device)
    if kind == "sliding" and config.sliding_window:
        return SlidingCache(config.n_kv_heads, config.d_qk, config.d_v, config.sliding_window,
                            config.max_positions, dtype, device)
    return HeadCache(config.n_kv_heads, config.d_qk, config.d_v, capacity, config.max_positions, dtype, device)
