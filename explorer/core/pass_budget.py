"""How much a packed pass (explorer.core.packed) holds, and how a batch is cut to fit a memory budget.

    S = sum_i T_i rows in one pass;  pass_bytes(S) ~ L S (5 d + 3 (N_Q + N_KV) d_head) + 2 N_Q S^2 (+ kept maps)

A batch's prompts are cut in order into chunks whose pass_bytes fit the budget (`memory=` of run, patch and
heads, or a quarter of the device's free memory), PASS_ROWS rows at most.
"""
from __future__ import annotations

import os

import numpy as np
import torch

from explorer.core.errors import ExplorerError

PASS_ROWS = 2048    # a batch's packed pass at most: its attention is S x S, so beyond this its S^2 work on
                    # other prompts' (masked) keys outgrows what reading the weights once saves


def pass_bytes(config, lengths: list[int], weights: bool) -> int:
    """The memory a packed prefill of prompts of `lengths` holds at its peak, roughly (float32):

        L S (5 d + 3 (N_Q + N_KV) d_head)       every layer's rows until the records are made
                                                (X, h in and out, both sublayer outputs; Q|K|V, rotated Q, K, O)
      + 2 N_Q S^2                               one layer's scores and A over the packed rows (a fused
                                                kernel under a block mask may form them too)
      + L N_Q sum_i T_i^2                       each prompt's kept maps, when A is asked for (a short
                                                prompt stores it)

    with S = sum_i T_i."""
    rows = sum(lengths)
    per_row = config.n_layers * (5 * config.d_model + 3 * (config.n_heads + config.n_kv_heads) * config.d_head)
    kept = config.n_layers * sum(t * t for t in lengths) if weights else 0
    return 4 * (rows * per_row + config.n_heads * (2 * rows * rows + kept))


def chunks(count: int, fits) -> list[list[int]]:
    """Indices 0..count-1 cut in order into runs for which fits(indices) holds; an index that does not fit
    alone is a run of its own (it would need that memory alone too)."""
    out: list[list[int]] = []
    for index in range(count):
        if out and fits(out[-1] + [index]):
            out[-1].append(index)
        else:
            out.append([index])
    return out


def by_length(chunk: list[int], lengths: list[int]) -> list[int]:
    """The prompts of a chunk in the order its packed pass takes them: by length (stable), so that prompts of one
    length lie side by side and its fused attention takes them as one batch of causal squares
    (fused_attention._runs). Each prompt's numbers do not depend on its place in the pass."""
    return sorted(chunk, key=lengths.__getitem__)


def budget_of(loaded, memory) -> int:
    """The `memory=` of a batch (run, patch, heads) as the bytes its packed passes may take: a whole number,
    1 or more, or None for default_budget; anything else is refused in one sentence."""
    if memory is None:
        return default_budget(loaded)
    if isinstance(memory, bool) or not isinstance(memory, (int, np.integer)) or memory < 1:
        raise ExplorerError(f"memory={memory!r} must be a number of bytes, 1 or more")
    return int(memory)


def rows_within(config, budget: int) -> int:
    """The most rows one pass may pack within `budget` bytes (pass_bytes, no maps kept), PASS_ROWS at most
    and 1 at least (a single row runs whatever it needs)."""
    low, high = 1, PASS_ROWS
    while low < high:                                       # pass_bytes grows with the rows
        middle = (low + high + 1) // 2
        low, high = (middle, high) if pass_bytes(config, [middle], weights=False) <= budget else (low, middle - 1)
    return low


def default_budget(loaded) -> int:
    """The memory a batch's packed passes may take: a quarter of what is free on the model's device
    (CUDA: its free memory; else the host's free pages), between 256 MiB and 2 GiB."""
    device = loaded.model.embed.weight.device
    try:
        if device.type == "cuda":
            free = torch.cuda.mem_get_info(device)[0]
        else:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError, RuntimeError):      # no such counter here
        free = 4 << 30
    return int(min(2 << 30, max(256 << 20, free // 4)))


def shares_logits(config, rows: int, budget: int) -> bool:
    """Whether a pass of `rows` rows may hold its logits (rows x V float32) as one product within `budget`."""
    return 4 * rows * config.vocab_size <= budget
