"""The logit lens at one position: softmax(norm(h_l[p]) W_U) after each layer l (nostalgebraist 2020).

Only position p's residual row is needed, and the decoder's KV cache already holds every earlier
position's keys and values as the model computed them. So p is fed alone, against a read-only view of
the cache cut at p: one token through L blocks, O(L (p d + params)), instead of the whole prefix again
(at 8,000 tokens the prefix with its recorded maps took tens of seconds). The view writes nothing, so
the decoder's own cache and trace stay as they are. A cache that no longer holds every key p sees
(a sliding ring that wrapped past it) falls back to running the prefix, with no attention recorded.
"""
from __future__ import annotations

import numpy as np
import torch

from explorer.core.capture import StepCapture
from explorer.core.errors import ExplorerError
from explorer.core.kv_cache import HeadCache, LatentCache, SlidingCache
from explorer.core.recording import top_candidates


class PrefixView:
    """One layer's cache read before position p, with p's own entries appended: `update` as the caches
    give it ((N_KV, n_kv, d) per-head tensors or (n_kv, d) latents, and the keys' positions), unwritten."""

    def __init__(self, first: torch.Tensor, second: torch.Tensor, positions: np.ndarray, position: int):
        self.first, self.second, self.positions, self.position = first, second, positions, position

    def update(self, first: torch.Tensor, second: torch.Tensor):
        axis = first.dim() - 2                                       # the token axis: 1 per head, 0 for latents
        new = np.arange(self.position, self.position + first.shape[axis], dtype=np.int64)
        positions = np.concatenate((self.positions, new))
        return (torch.cat((self.first, first), dim=axis), torch.cat((self.second, second), dim=axis),
                positions)


class PrefixCaches:
    """The decoder's caches of every layer cut at p (what `Transformer.run_blocks` reads as `cache.layers`)."""

    def __init__(self, layers: list[PrefixView]):
        self.layers = layers


def prefix_view(cache, position: int) -> PrefixView | None:
    """Cache entries of positions < `position` as a PrefixView; None where the cache cannot give them all."""
    if isinstance(cache, (HeadCache, LatentCache)) and position <= cache.length:
        axis = 1 if isinstance(cache, HeadCache) else 0
        first, second = (buffer.narrow(axis, 0, position) for buffer in cache.buffers)
        return PrefixView(first, second, np.arange(position, dtype=np.int64), position)
    if isinstance(cache, SlidingCache) and position <= cache.length:
        keys, values, positions = cache.ordered()                    # (N_KV, held, d), positions in order
        needed = max(0, position - cache.window + 1)                 # the oldest key the window at p sees
        if positions.size and int(positions[0]) > needed:
            return None
        keep = int(np.searchsorted(positions, position))
        return PrefixView(keys[:, :keep], values[:, :keep], positions[:keep], position)
    return None


def row_capture(decoder, position: int) -> StepCapture:
    """Every block's tensors at `position` (LayerCapture's x, h_in, a_l, f_l, h_l; no A), the last row of
    each (the only one where the cache served): what the residual stream and Show the work read."""
    model, n_layers = decoder.model, decoder.config.n_layers
    views = [prefix_view(layer, position) for layer in decoder.kv_cache.layers]
    capture = StepCapture(n_layers, weights=False)                   # A is not wanted: a fused kernel may run
    ids = torch.as_tensor(decoder.trace.token_ids[: position + 1], device=decoder.device)
    if all(view is not None for view in views):
        model(ids[position:], np.array([position], dtype=np.int64), PrefixCaches(views), capture,
              decoder._intervened)
    else:
        model(ids, np.arange(position + 1, dtype=np.int64), None, capture, decoder._intervened)
    return capture


def residual_rows(decoder, position: int) -> torch.Tensor:
    """h_l at `position` after each block l of the decoder's model: (L, d_model)."""
    capture = row_capture(decoder, position)
    return torch.stack([layer.residual[-1] for layer in capture.layers])        # (L, d)


def logit_lens(decoder, position: int, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Top-k next tokens read from the residual stream at `position` after each layer: ids and probs, (L, k)."""
    if not 0 <= position < decoder.trace.n_tokens:
        raise ExplorerError(f"position {position} is outside the trace's {decoder.trace.n_tokens} tokens")
    with torch.inference_mode():
        residuals = residual_rows(decoder, position)                 # (L, d)
        top_probs, top_ids = top_candidates(decoder.model.logits(decoder.model.norm(residuals)), k)
    return top_ids.cpu().numpy().astype(np.int64), top_probs.cpu().numpy()
