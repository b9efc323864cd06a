"""Several prompts in one forward pass, packed side by side: each row attends only within its own prompt.

    rows = [prompt_0 | prompt_1 | ...],  positions restart at 0 in each,  mask_ij = causal and same prompt

The weights are read once for all prompts (what a short prompt's pass spends its time on), and no
padding enters any sum, so each prompt's numbers are its own pass's up to float rounding. The
capture of the pass is cut back into one capture per prompt, up to its asked position.
"""
from __future__ import annotations

import numpy as np
import torch

from explorer.core.capture import AttentionCapture, StepCapture

BLOCK_ROWS = ("residual_in", "attn_out", "ffn_out", "residual", "x")


def can_pack(intervention) -> bool:
    """Whether a packed pass equals the prompts' own passes under `intervention`: not with a mean
    ablation (its mean would be taken over every packed prompt) nor with patches (they name positions
    of one prompt)."""
    if intervention is None or intervention.is_empty:
        return True
    means = any(a.mode == "mean" for a in intervention.ablations) or \
        (intervention.keep_only is not None and intervention.keep_only.mode == "mean")
    return not means and not intervention.patches


def packed_captures(loaded, prompts: list[np.ndarray], positions: list[int], intervention=None) -> list[StepCapture]:
    """One capture per prompt whose last row is its position, from one packed pass over the prompts
    cut at their positions."""
    from explorer.core.attention import as_run

    model = loaded.model
    cut = [np.asarray(ids[: p + 1], dtype=np.int64) for ids, p in zip(prompts, positions)]
    lengths = [len(ids) for ids in cut]
    sequences = np.repeat(np.arange(len(cut)), lengths)
    rows = np.concatenate([np.arange(n) for n in lengths])
    capture = StepCapture(loaded.config.n_layers, weights=False)
    with torch.inference_mode():
        step = model.step_context(rows, as_run(intervention), sequences)
        h = model.embed_tokens(torch.as_tensor(np.concatenate(cut), device=model.embed.weight.device), step)
        model.run_blocks(h, step, None, capture)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    return [_rows_of(capture, slice(int(a), int(b))) for a, b in zip(starts[:-1], starts[1:])]


def _rows_of(capture: StepCapture, rows: slice) -> StepCapture:
    """The block tensors and head outputs of one packed prompt's rows."""
    out = StepCapture(len(capture.layers), weights=False)
    for layer, whole in zip(out.layers, capture.layers):
        for name in BLOCK_ROWS:
            value = getattr(whole, name)
            setattr(layer, name, None if value is None else value[rows])
        layer.attn = AttentionCapture(q=None, k=None, v=None, weights=None, head_out=whole.attn.head_out[:, rows],
                                      mask=None, kv_positions=None, scale=whole.attn.scale)
    return out
