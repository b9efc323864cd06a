"""One head's attention map as drawn: the matrix with masked cells as NaN, its tick labels, its colours.

The panels, the image exports and the Python API's `show()` all draw these.
Numpy only.
"""
from __future__ import annotations

import math
import unicodedata
from functools import lru_cache

import numpy as np

from explorer.views.blocks import image_block_max
from explorer.views.grid import score_levels

LOG_FLOOR = 1e-6
DISPLAY_CELLS = 2048     # a figure draws at most this many rows and columns; a larger map is drawn as block maxima


def short_label(text: str, width: int = 10) -> str:
    """A tick label: whitespace made visible, long tokens cut after a whole character (never between a letter
    and its accent, nor inside an emoji sequence)."""
    text = text.replace(" ", "·").replace("\n", "↵").replace("\t", "→")
    if len(text) <= width:
        return text
    cut = width - 1
    while cut > 1 and (_joins_before(text[cut]) or text[cut - 1] == ZWJ):
        cut -= 1
    return text[:cut] + "…"


ZWJ = "\u200d"        # the zero-width joiner of emoji sequences (👩‍💻)


def _joins_before(char: str) -> bool:
    """Whether `char` belongs to the character before it: a combining mark, a joiner, a variation selector or
    an emoji skin-tone modifier."""
    point = ord(char)
    return (unicodedata.combining(char) > 0 or char == ZWJ or 0xFE00 <= point <= 0xFE0F
            or 0x1F3FB <= point <= 0x1F3FF or unicodedata.category(char) in ("Mn", "Me"))


def attention_matrix(trace, layer: int, head: int, step: int | None = None, values: str = "weights",
                     cross: bool = False) -> np.ndarray:
    """One head's weights (or scores) with masked cells as NaN: (T_q, T_kv)."""
    if values == "scores":
        matrix = trace.scores(layer, head, step, cross)
    else:
        matrix = trace.attention_head(layer, head, step, cross).astype(np.float32)
    mask = trace.mask(layer, step, cross)
    return np.where(mask & np.isfinite(matrix), matrix, np.nan).astype(np.float32)


def mean_attention_matrix(trace, layer: int, step: int | None = None, values: str = "weights",
                          cross: bool = False) -> np.ndarray:
    """The layer's heads averaged, Ā = (1/N_Q) Σ_h A_h (or the mean of S), masked cells NaN: (T_q, T_kv)."""
    heads = [attention_matrix(trace, layer, head, step, values, cross) for head in range(trace.model.n_heads)]
    return np.mean(np.stack(heads), axis=0).astype(np.float32)     # NaN stays NaN: the mask is every head's


def axis_labels(trace, shape: tuple[int, int], cross: bool = False,
                numbered: bool = False) -> tuple[list[str], list[str]]:
    """Tick labels of the query rows and key columns; `numbered` puts each token's position first
    ("5203 ·cat"), so a long map's thinned ticks say where they are. Each token text is labelled once
    (token_tick_labels) for every map and figure of the trace: a long map's first paint made 16,000 labels."""
    text = trace.token_text
    source = trace.encoder.token_text if cross and trace.encoder is not None else text
    return (list(token_tick_labels(tuple(text), numbered)[: shape[0]]),
            list(token_tick_labels(tuple(source), numbered)[: shape[1]]))


@lru_cache(maxsize=8)
def token_tick_labels(texts: tuple[str, ...], numbered: bool = False) -> tuple[str, ...]:
    """A label per token of `texts` (a trace's token_text: the same tuple at every call, so the recent
    traces' labels are found at the cost of hashing it), position first where `numbered`."""
    if numbered:
        return tuple(f"{i} {short_label(t)}" for i, t in enumerate(texts))
    return tuple(short_label(t) for t in texts)


def grid_image(grid, values: str, log: bool) -> tuple[np.ndarray, tuple[float, float]]:
    """The all-heads mosaic as drawn: scores at robust levels, weights linear (0 to 1, or from the lowest
    to the highest weight where a kernel made some negative) or log10."""
    if values == "scores":
        return grid.image, score_levels(grid.image)
    if log:
        return log_scaled(grid.image)
    low, high = weight_range(grid.image)
    return grid.image, ((0.0, 1.0) if low >= 0 else (low, max(high, 1.0)))


def head_levels(matrix: np.ndarray, values: str, log: bool) -> tuple[np.ndarray, tuple[float, float] | None]:
    """What one head's figure draws and its colour levels: weights from 0 (or their minimum where a kernel
    made some negative) to their maximum (or log10), scores at None (the heatmap's own range)."""
    if log and values == "weights":
        return log_scaled(matrix)
    if values == "weights":
        low, high = weight_range(matrix)
        return matrix, (min(low, 0.0), high)
    return matrix, None


def weight_range(matrix: np.ndarray) -> tuple[float, float]:
    """The lowest and highest finite weight; (0, 1) where none is (every cell masked)."""
    finite = np.isfinite(matrix)
    if not finite.any():
        return 0.0, 1.0
    return float(np.min(matrix, where=finite, initial=np.inf)), float(np.max(matrix, where=finite, initial=-np.inf))


def log_scaled(matrix: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """log10 of weights with a floor, keeping NaN (masked) cells; levels from the floor to 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log10(np.maximum(matrix, LOG_FLOOR))
    out[np.isnan(matrix)] = np.nan
    return out.astype(np.float32), (math.log10(LOG_FLOOR), 0.0)


def display_reduced(matrix: np.ndarray, max_cells: int = DISPLAY_CELLS, signed: bool = False) -> tuple[np.ndarray, int]:
    """`matrix` (R, C) as drawn: the maximum of each f x f block (NaN where a whole block is masked;
    `signed`, for weights: the entry furthest from 0, its sign kept, blocks.image_block_max), with f the
    smallest factor that brings both sides to `max_cells` or fewer, and f (1: as it is).

    Maxima, so that a single strong weight stays visible however far a long map is reduced (signed
    extremes, so that a negative one does too, in the negative colours); the exact values are the .npy
    export's and the panel's hover.
    """
    factor = max(1, math.ceil(max(matrix.shape) / max_cells))
    if factor == 1:
        return matrix, 1
    return image_block_max(matrix, factor, factor, signed), factor
