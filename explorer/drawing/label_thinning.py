"""Which token labels an axis shows, so that none overlaps another and neither end is dropped: every stride-th
label, the stride a 1, 2 or 5 step just large enough for the room one label takes, then an upright key label that
still crowds its neighbour (moved into the axis at an end) gives way, the first and last kept. Numbers only:
heatmap_axes.TokenAxis measures the room a label takes in its font and asks here which labels to draw."""
from __future__ import annotations

import math

import numpy as np


def nice_step(at_least: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least `at_least`, and at least 1."""
    if at_least <= 1:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(at_least))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= at_least)


def thinned_ticks(positions: np.ndarray, min_value: float, max_value: float, size: float,
                  needed_px: float) -> list[tuple[int, list[float]]]:
    """pyqtgraph's tick levels for labels at `positions` on an axis `size` px long showing min..max_value: the
    visible labels whose index is a multiple of a stride that leaves each label `needed_px` along the axis, and
    the last visible one: beside the multiple before it where they keep `needed_px` apart, else in its place
    (12 keys at a stride of 2 labelled 0…10, the last key unnamed; drive23)."""
    lo, hi = sorted((min_value, max_value))
    visible = np.flatnonzero((positions >= lo - 0.5) & (positions <= hi + 0.5))
    if visible.size == 0:
        return []
    spacing = (positions[-1] - positions[0]) / max(1, len(positions) - 1) or 1.0
    px_per_label = size / max(hi - lo, 1e-9) * spacing
    stride = int(nice_step(needed_px / max(px_per_label, 1e-9)))
    chosen = list(visible[visible % stride == 0])
    last = visible[-1]
    if not chosen:                               # zoomed in between two multiples
        chosen = [last]
    elif chosen[-1] != last:
        if (last - chosen[-1]) * px_per_label >= needed_px:
            chosen.append(last)
        elif len(chosen) > 1:
            chosen[-1] = last
    return [(stride, [float(positions[i]) for i in chosen])]


def kept_apart(placed: list[tuple[float, str]], needed: float) -> list[tuple[float, str]]:
    """The labels (drawn x, text) whose lines keep `needed` px apart, both ends kept: the first key's label,
    moved into the axis by half a line, stood 11 px from the next at 128 keys ('␣tor' over '␣inter' in the
    all-heads export, drive21), so its neighbour gives way."""
    kept: list[tuple[float, str]] = []
    for i, (x, label) in enumerate(placed):
        if kept and x - kept[-1][0] < needed:
            if i < len(placed) - 1 or len(kept) == 1:
                continue
            kept.pop()                           # the last key keeps its label; the one before gives way
        kept.append((x, label))
    return kept
