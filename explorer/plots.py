"""Figures for notebooks and scripts: matplotlib on its Agg backend, never Qt, never an event loop.

The matrix, tick labels and colour levels come from explorer.views (attention_matrix,
axis_labels, head_levels, mosaic, grid_image), the functions the app's panels and
image exports draw, so a figure here shows the numbers the app shows. Masked cells
are left blank, as in the app, so "zero because masked" and "almost zero" differ.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from explorer.core import files
from explorer.core.errors import ExplorerError
from explorer.views import trace_views
from explorer.views.grid import mosaic
from explorer.views.grid_scales import layer_scales, scale_image
from explorer.views.maps import attention_matrix, axis_labels, grid_image, head_levels

COLOURMAP = "viridis"             # the app's heatmaps
MAX_TICKS = 40                    # token labels beyond this are thinned, as the app's axes thin them


@dataclass
class AttentionFigure:
    """A drawn map: the matplotlib Figure, and the matrix and labels it shows.

    Jupyter displays it through `_repr_png_` / `_repr_svg_`; `save(path)` writes PNG or SVG.
    """

    figure: object                # matplotlib.figure.Figure
    matrix: np.ndarray            # what is drawn, NaN where masked
    rows: list[str]
    columns: list[str]
    levels: tuple[float, float]

    def _bytes(self, fmt: str) -> bytes:
        import matplotlib  # matplotlib, loaded on first use

        buffer = io.BytesIO()
        with matplotlib.rc_context({"svg.fonttype": "none"}):     # SVG labels stay text
            self.figure.savefig(buffer, format=fmt, dpi=100, bbox_inches="tight")
        if fmt == "svg":          # neighbouring cells meet without the seams antialiasing draws between them
            return buffer.getvalue().replace(b"<svg ", b'<svg shape-rendering="crispEdges" ', 1)
        return buffer.getvalue()

    def _repr_png_(self) -> bytes:
        return self._bytes("png")

    def _repr_svg_(self) -> str:
        return self._bytes("svg").decode("utf-8")

    def save(self, path: str | Path) -> Path:
        """Write the figure as .png or .svg."""
        path = Path(path)
        if path.suffix.lower() not in (".png", ".svg"):
            raise ExplorerError(f"{path.name} must end in .png or .svg")
        data = self._bytes(path.suffix.lower()[1:])
        return files.write_atomic(path, lambda temporary: Path(temporary).write_bytes(data))


MAX_VECTOR_CELLS = 256 * 256     # a map drawn as vector cells at most (beyond: an embedded image)


def _new_figure(width: float, height: float):
    from matplotlib.figure import Figure  # no pyplot: no backend, no GUI event loop

    return Figure(figsize=(width, height), layout="constrained")


def _ticks(axis_set, labels: list[str], positions=None) -> None:
    """Label every tick, or every k-th when there are more than MAX_TICKS."""
    positions = np.arange(len(labels)) if positions is None else np.asarray(positions)
    every = max(1, -(-len(labels) // MAX_TICKS))
    axis_set(positions[::every], labels[::every])


def _image(axes, shown: np.ndarray, levels: tuple[float, float]):
    """The map, rows top to bottom: up to MAX_VECTOR_CELLS cells as one quadrilateral each, so that an
    SVG holds vector cells (sharp at any zoom, read by any SVG reader); a larger map as an image."""
    import matplotlib  # matplotlib, loaded on first use

    colours = matplotlib.colormaps[COLOURMAP].with_extremes(bad=(0, 0, 0, 0))
    masked = np.ma.masked_invalid(shown)
    if shown.size > MAX_VECTOR_CELLS:
        return axes.imshow(masked, cmap=colours, vmin=levels[0], vmax=levels[1], interpolation="nearest",
                           aspect="auto")
    rows, columns = shown.shape
    mesh = axes.pcolormesh(np.arange(columns + 1) - 0.5, np.arange(rows + 1) - 0.5, masked, cmap=colours,
                           vmin=levels[0], vmax=levels[1], shading="flat", edgecolors="none", antialiased=False)
    axes.set_xlim(-0.5, columns - 0.5)
    axes.set_ylim(rows - 0.5, -0.5)                 # row 0 at the top, as an image
    return mesh


def _colour_bar(figure, image, axes, label: str) -> None:
    """A colour bar drawn as vector bands: matplotlib makes a bar of 50 colours or more an embedded image."""
    bar = figure.colorbar(image, ax=axes, label=label)
    if bar.solids is not None:
        bar.solids.set_rasterized(False)


def head_figure(view: trace_views.View, layer: int, head: int, values: str = "weights", log: bool = False,
                name: str = "") -> AttentionFigure:
    """One head: query rows top to bottom, key columns left to right, a colour bar beside."""
    matrix = attention_matrix(view.trace, layer, head, view.step, values, view.cross)     # (N_Q, N_KV)
    shown, levels = head_levels(matrix, values, log)
    if levels is None:                                       # scores: the finite range, as the panel's auto-levels
        finite = shown[np.isfinite(shown)]
        levels = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    rows, columns = axis_labels(view.trace, matrix.shape, view.cross)
    side = min(10.0, 3.0 + 0.22 * max(matrix.shape))
    figure = _new_figure(side + 1.2, side)
    axes = figure.add_subplot()
    image = _image(axes, shown, levels)
    symbol = "S" if values == "scores" else ("log10 A" if log else "A")
    axes.set_title(f"{name}: layer {layer}, head {head}, {symbol} ({matrix.shape[0]}×{matrix.shape[1]})",
                   fontsize=10)
    axes.xaxis.tick_top()
    axes.set_xlabel("key")
    axes.xaxis.set_label_position("top")
    axes.set_ylabel("query")
    _ticks(lambda p, t: axes.set_xticks(p, t, rotation=90, fontsize=8), columns)
    _ticks(lambda p, t: axes.set_yticks(p, t, fontsize=8), rows)
    _colour_bar(figure, image, axes, symbol)
    return AttentionFigure(figure, shown, rows, columns, levels)


def grid_figure(view: trace_views.View, values: str = "weights", log: bool = False,
                name: str = "") -> AttentionFigure:
    """Every layer (down) × head (across) as one mosaic, as the app's grid draws it."""
    grid = mosaic(view.trace, upto_step=view.step, cross=view.cross, values=values)
    log = log and values == "weights"
    shown, levels = grid_image(grid, values, log)
    scales = layer_scales(grid, values, log)    # a layer whose kernel made its weights signed: a scale of its own
    height = min(12.0, 2.0 + 0.35 * grid.n_layers)
    figure = _new_figure(min(14.0, 2.5 + 0.8 * grid.n_heads), height)
    axes = figure.add_subplot()
    images = [_image(axes, scale_image(grid, scale, values, log), scale.levels) for scale in scales]
    symbol = "scores S" if values == "scores" else ("log10 A" if log else "weights A")
    axes.set_title(f"{name}: {grid.n_layers} layers × {grid.n_heads} heads, {symbol}, "
                   f"{view.trace.n_tokens} tokens", fontsize=10)
    axes.xaxis.tick_top()
    rows = [f"L{i}" for i in range(grid.n_layers)]
    columns = [f"H{i}" for i in range(grid.n_heads)]
    _ticks(lambda p, t: axes.set_xticks(p, t, fontsize=8), columns, grid.head_centres())
    _ticks(lambda p, t: axes.set_yticks(p, t, fontsize=8), rows, grid.layer_centres())
    for image, scale in zip(images, scales):
        _colour_bar(figure, image, axes, symbol + (f", {scale.named}" if len(scales) > 1 else ""))
    return AttentionFigure(figure, shown, rows, columns, levels)
