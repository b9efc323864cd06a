"""The all-heads grid's colour scales: which layers share one, and its levels.

Under the model's softmax (or any kernel whose normalised weights are ≥ 0) a layer's weights are
probabilities in [0, 1], and every such layer is drawn on the one scale [0, 1]. A layer whose kernel
makes some weights negative (the linear kernel f_κ(x) = x: A = Z⁻¹ S, rows summing to 1, entries of
±70 on the bundled MLA twin) has a range of its own: on one scale for the whole grid its ±70 washed
every probability layer out to the colour of 0. Each such layer gets its own signed scale, up to
MAX_SIGNED_SCALES of them (beyond that they share one, so the legend stays a few colour bars).
Scores and log10 weights are one kind of value in every layer: one scale, as maps.grid_image gives it.
Numpy only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.views.grid import Mosaic
from explorer.views.maps import grid_image, weight_range

MAX_SIGNED_SCALES = 3        # signed layers with a scale each; more share one
PROBABILITY_SLACK = 1e-5     # float32 softmax rows may reach 1 + a few ulps


@dataclass(frozen=True)
class LayerScale:
    """One colour scale of the grid and the layers drawn on it."""

    layers: tuple[int, ...]
    levels: tuple[float, float]

    @property
    def label(self) -> str:
        """The layers it draws, runs joined: "L0–2, L4"."""
        runs: list[list[int]] = []
        for layer in self.layers:
            if runs and layer == runs[-1][-1] + 1:
                runs[-1].append(layer)
            else:
                runs.append([layer])
        return ", ".join(f"L{run[0]}" if len(run) == 1 else f"L{run[0]}–{run[-1]}" for run in runs)

    @property
    def named(self) -> str:
        """What a colour bar of the scale is labelled: "layer L1", "layers L0, L2–3"."""
        return ("layer " if len(self.layers) == 1 else "layers ") + self.label


def layer_rows(grid: Mosaic, layer: int) -> np.ndarray:
    """The image rows of one layer's tiles, all its bands where its heads wrap (a view), gutters and empty slots
    included (NaN)."""
    top, _, height, _ = grid.layer_block(layer)
    return grid.image[top: top + height]


def layer_scales(grid: Mosaic, values: str = "weights", log: bool = False,
                 drawn: tuple[np.ndarray, tuple[float, float]] | None = None) -> list[LayerScale]:
    """The grid's scales, the signed ones first (the heat map's own colour bar draws the first): one per layer
    whose weights leave [0, 1], and one [0, 1] for all the others; scores or log10: one for every layer.
    `drawn`: maps.grid_image(grid, values, log) where the caller has it already (it is not computed again)."""
    every = tuple(range(grid.n_layers))
    if values == "scores" or log:
        return [LayerScale(every, (drawn or grid_image(grid, values, log))[1])]
    ranges = [weight_range(layer_rows(grid, layer)) for layer in every]
    signed = [layer for layer in every if ranges[layer][0] < 0.0 or ranges[layer][1] > 1.0 + PROBABILITY_SLACK]
    probabilities = tuple(layer for layer in every if layer not in signed)
    groups = [[layer] for layer in signed] if len(signed) <= MAX_SIGNED_SCALES else [signed] if signed else []
    scales = [LayerScale(tuple(group), _signed_levels([ranges[layer] for layer in group])) for group in groups]
    if probabilities:
        scales.append(LayerScale(probabilities, (0.0, 1.0)))
    return scales


def _signed_levels(ranges: list[tuple[float, float]]) -> tuple[float, float]:
    """From the lowest weight (or 0) to the highest (or 0) of the layers: 0 is on every scale."""
    low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
    return min(low, 0.0), max(high, 0.0)


def scale_image(grid: Mosaic, scale: LayerScale, values: str = "weights", log: bool = False,
                drawn: tuple[np.ndarray, tuple[float, float]] | None = None) -> np.ndarray:
    """The grid's image as drawn (maps.grid_image: log10 where `log`; `drawn` where the caller has it already)
    with only the scale's layers (every other cell NaN, drawn transparent)."""
    image = (drawn or grid_image(grid, values, log))[0]
    if len(scale.layers) == grid.n_layers:
        return image
    shown = np.full_like(image, np.nan)
    for layer in scale.layers:
        top, _, height, _ = grid.layer_block(layer)
        shown[top: top + height] = image[top: top + height]
    return shown
