"""Attention figures for export: one head, all heads of a layer, or the full grid.

Each is an offscreen `GraphicsLayoutWidget` laid out at the exact pixel size
asked for, with token tick labels and a colour bar, so that pyqtgraph's
ImageExporter and SVGExporter draw it at its natural scale (no stretched fonts).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication

from explorer.core.trace import Trace
from explorer.drawing.colours import figure_colours, paint_figure
from explorer.drawing.grid_legend import GridLegend
from explorer.drawing.heatmap import Heatmap
from explorer.drawing.heatmap_axes import TokenAxis, scaled_px, text_px
from explorer.drawing.plot_title import TITLE_SIZE
from explorer.views.grid import Mosaic, blank_mosaic, mosaic
from explorer.views.long_maps import THREADS, ReducedMaps, block_maxima, display_factor, extent, grid_block, is_long
from explorer.views.maps import attention_matrix, axis_labels, display_reduced, head_levels
from explorer.views.trace_views import kinds_of
from explorer.views.words import plural

BASE_SIZE = (1000, 800)     # the export size whose text is as large as on screen
EDGE_PX = 6                 # the band of bare background every figure keeps on each side, beyond any text
FIT_TRIES = 4               # text made smaller at most this many times until the figure's least size fits
LEAST_TEXT_SHARE = 0.25     # nor smaller than this share of the size it was asked in


@dataclass(frozen=True, eq=False)
class HeadPicture:
    """One head's map as its figure draws it: `shown` (R, C), NaN where masked, the maxima of
    `factor` × `factor` blocks (1: the exact cells) of a map of `extent` (T_q, T_kv) real cells."""

    shown: np.ndarray
    factor: int
    extent: tuple[int, int]
    long: bool = False           # rebuilt a block of rows at a time (long_maps): its ticks carry positions


def head_picture(trace: Trace, layer: int, head: int, step: int | None = None, values: str = "weights",
                 cross: bool = False, maps=None, cancelled: Callable[[], bool] | None = None) -> HeadPicture:
    """What `attention_figure` draws of one head. Numpy only, so it may run off the GUI thread.

        shown[I, J] = max { A[i, j] : i // f = I, j // f = J }

    (weights that may be negative: the entry furthest from 0, its sign kept, so that a block of negative
    weights is drawn in the negative colours.)

    A long trace (long_maps.is_long) is reduced a block of query rows at a time, never as its dense
    T × T array, at the panel's block side (long_maps.display_factor), from `maps` (a ReducedMaps: the
    panel's kept map costs nothing) where given; a short one is the dense matrix, reduced past
    DISPLAY_CELLS a side (maps.display_reduced). `cancelled()` true raises long_maps.Cancelled."""
    if is_long(trace, step, cross):
        size = extent(trace, step, cross, layer)
        factor = display_factor(*size)
        if maps is not None:
            reduced = maps.get(trace, layer, [head], factor, step, cross, values, cancelled, THREADS)
        else:
            reduced = block_maxima(trace, layer, [head], factor, step, cross, values, cancelled=cancelled,
                                   threads=THREADS)
        return HeadPicture(reduced, factor, size, long=True)
    matrix = attention_matrix(trace, layer, head, step, values, cross)
    shown, factor = display_reduced(matrix, signed=values == "weights")
    return HeadPicture(shown, factor, matrix.shape)


def attention_figure(trace: Trace, layer: int | str, head: int | str, width: int, height: int,
                     step: int | None = None, values: str = "weights", log: bool = False,
                     cross: bool = False, theme: str = "light",
                     picture: HeadPicture | list[HeadPicture] | None = None,
                     text_scale: float = 1.0, kind: str | None = None) -> pg.GraphicsLayoutWidget:
    """Build and lay out the figure; `layer="all"` is the full grid, `head="all"` a layer's heads. Its title
    names the attention `kind` (kind_words) where the model has more than one.
    `text_scale` makes every text that many times its size for the image's size (the text size chosen
    for exported figures).
    `theme` is the figure's own ("light", print-ready, or "dark"), never the app's. One head's
    `picture` (head_picture; a layer's: one per head), if computed already (off the GUI thread), is drawn
    as it is."""
    with figure_colours(theme):
        figure = pg.GraphicsLayoutWidget(size=(width, height))
        figure.heatmaps = []
        named = kind_words(trace, cross, kind)
        if layer == "all":
            _grid(figure, trace, picture or grid_picture(trace, step, values, cross), values, log,
                  extent(trace, step, cross), named)
        elif head == "all":
            pictures = picture or layer_pictures(trace, int(layer), step, values, cross)
            _layer(figure, trace, int(layer), pictures, values, log, cross, named)
        else:
            picture = picture or head_picture(trace, int(layer), int(head), step, values, cross)
            _head(figure, trace, int(layer), int(head), picture, values, log, cross, named)
        scale_fonts(figure, font_scale(width, height) * text_scale)
    lay_out(figure, width, height, theme)
    if layer != "all" and head == "all":
        _name_outer_tiles_only(figure, width, height)
    return figure


def lay_out(figure: pg.GraphicsLayoutWidget, width: int, height: int, theme: str = "light"):
    """Lay a figure out offscreen at exactly width × height pixels, in the figure theme's colours, a margin
    of bare background on every side (edge_margin) and its text no larger than fits (fit_text)."""
    paint_figure(figure, theme)
    figure.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    figure.setFixedSize(width, height)
    figure.show()
    QApplication.processEvents()
    with figure_colours(theme):            # a title set again in fit_text reads the theme's colours
        fit_text(figure, width, height)
    return figure


def edge_margin(figure: pg.GraphicsLayoutWidget) -> int:
    """The layout's margin on each side: EDGE_PX, and half the tallest tick label beyond it. An axis's end
    labels are centred on its ends, so the colour bar's "0" and "1.0" stood half a line past the layout's
    edge: with the layout's own 9 px, a 640 × 480 head at twice the text size drew its "0" 2 px from the
    bottom, and the SVG's grid touched the left edge."""
    tallest = max((QFontMetrics(item.style["tickFont"] or QApplication.font()).height()
                   for item in figure.scene().items() if isinstance(item, pg.AxisItem) and item.isVisible()),
                  default=QFontMetrics(QApplication.font()).height())
    return EDGE_PX + math.ceil(tallest / 2)


def fit_text(figure: pg.GraphicsLayoutWidget, width: int, height: int) -> None:
    """Lay the figure out in width × height with edge_margin on every side; where its least size (a title on
    one line, labels at the text size asked) is larger, its text is made smaller until it fits, within
    FIT_TRIES and LEAST_TEXT_SHARE. Laid out larger than the image, the SVG cut the title and the labels at
    its edges, and the PNG drew the whole layout shrunk into a corner (400 × 300 at twice the text size)."""
    shrunk = 1.0
    for _ in range(FIT_TRIES + 1):
        margin = edge_margin(figure)
        figure.ci.setContentsMargins(margin, margin, margin, margin)
        figure.ci.setGeometry(0, 0, width, height)
        QApplication.processEvents()
        least = figure.ci.layout.minimumSize()
        ratio = min(width / max(least.width(), 1.0), height / max(least.height(), 1.0))
        if ratio >= 1 or shrunk <= LEAST_TEXT_SHARE:
            return
        step = max(LEAST_TEXT_SHARE / shrunk, 0.97 * ratio)     # a little past the ratio: margins shrink too
        scale_fonts(figure, step)
        shrunk *= step


def font_scale(width: int, height: int) -> float:
    """How much larger than on screen an export's text is: 1 at BASE_SIZE, in proportion to the smaller of
    the two ratios beyond it (labels 1.5× as large on 1600 × 1200), never below 1 nor above 4."""
    return min(4.0, max(1.0, min(width / BASE_SIZE[0], height / BASE_SIZE[1])))


def scale_fonts(figure: pg.GraphicsLayoutWidget, scale: float) -> None:
    """Every text of the figure `scale` times its on-screen size: tick labels, axis titles, titles. Each is
    measured as drawn (the application's font, in points or in pixels, or a size of its own in any unit),
    and set in pixels. Called while the figure's colours are the defaults (figure_colours), which a title
    drawn again reads."""
    if scale == 1.0:
        return
    for item in figure.scene().items():
        if isinstance(item, pg.AxisItem):
            font = scaled_px(item.style["tickFont"] or QApplication.font(), scale)
            item.set_font(font) if isinstance(item, TokenAxis) else item.setStyle(tickFont=font)
            if item.labelText and item.label.isVisible():
                item.setLabel(item.labelText, item.labelUnits,
                              **{**item.labelStyle, "font-size": f"{round(text_px(item.label) * scale)}px"})
        elif isinstance(item, pg.LabelItem) and item.text:
            item.setText(item.text, size=f"{round(text_px(item.item) * scale)}px")


KIND_WORDS = {"encoder": "encoder self-attention", "self": "decoder self-attention", "cross": "cross-attention"}


def kind_option(model, kind: str) -> str | None:
    """`kind` (a view's, trace_views) where `model` has more than one kind to tell apart, else None: what an
    export is told to name (a decoder-only model's files and titles name none)."""
    return kind if len(kinds_of(model)) > 1 else None


def named_kind(trace: Trace, cross: bool = False, kind: str | None = None) -> str | None:
    """The map's kind, a key of KIND_WORDS, for a model with more than one (an encoder-decoder's encoder
    self-attention, decoder self-attention or cross-attention; trace_views.kinds_of), else None. `kind` as the
    caller's view names it (kind_option); None: read from the trace (cross-attention, or an encoder-decoder's
    decoder self-attention; the encoder's own view is a Trace of an encoder alone, so its caller names it)."""
    if kind is None:
        kind = "cross" if cross else ("self" if trace.model.is_encoder_decoder else None)
    return kind if kind in KIND_WORDS else None


def kind_words(trace: Trace, cross: bool, kind: str | None = None) -> str:
    """The map's kind (named_kind) in words, followed by a space, else "": the translator's export read
    "layer 0, head 0, A (4×4)" whichever it was; its titles, CSV headers and file names say which."""
    named = named_kind(trace, cross, kind)
    return f"{KIND_WORDS[named]} " if named else ""


def attention_file_name(trace: Trace, layer, head, suffix: str, cross: bool = False, kind: str | None = None) -> str:
    """The name offered for an attention export: attention_L0_H1.png, with the map's kind for a model with more
    than one (attention_cross-attention_L0_H1.npy): a .npy holds no header to say it."""
    words = kind_words(trace, cross, kind).strip().replace(" ", "-")
    return f"attention{'_' + words if words else ''}_L{layer}_H{head}.{suffix.lstrip('.')}"


def _title(figure, text: str, colspan: int = 1) -> None:
    figure.addLabel(text, row=0, col=0, colspan=colspan, size=TITLE_SIZE)


def _head(figure, trace, layer, head, picture: HeadPicture, values, log, cross, named: str) -> None:
    shown, levels = head_levels(picture.shown, values, log)      # log10 keeps maxima: it is increasing
    (t_q, t_kv), factor = picture.extent, picture.factor
    symbol = "S" if values == "scores" else ("log10 A" if log else "A")
    blocks = f", {factor}×{factor} block maxima" if factor > 1 else ""
    _title(figure, f"{trace.model.name}: layer {layer}, head {head}, {named}{symbol} ({t_q}×{t_kv}{blocks})")
    heatmap = Heatmap(figure.ci, row=1, col=0)
    rows, cols = axis_labels(trace, picture.extent, cross, numbered=picture.long)
    heatmap.set_matrix(shown, levels, rows, cols, extent=picture.extent,   # the axes count real tokens
                       signed=values == "weights" and not log)
    heatmap.plot.setLabels(left="query", top="key")
    figure.heatmaps.append(heatmap)


def layer_pictures(trace: Trace, layer: int, step: int | None = None, values: str = "weights", cross: bool = False,
                   maps=None, cancelled: Callable[[], bool] | None = None) -> list[HeadPicture]:
    """head_picture of every head of the layer, in order."""
    return [head_picture(trace, layer, h, step, values, cross, maps, cancelled) for h in range(trace.model.n_heads)]


def _layer(figure, trace, layer, pictures: list[HeadPicture], values, log, cross, named: str) -> None:
    n_heads = len(pictures)
    n_cols = math.ceil(math.sqrt(n_heads))
    scaled = [head_levels(p.shown, values, log) for p in pictures]
    finite = np.concatenate([s[np.isfinite(s)] for s, _ in scaled])
    levels = scaled[0][1] or ((float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0))
    if values == "weights" and not log:    # one scale for all: 0 (or the lowest) to the largest weight of any head
        levels = (min(level[0] for _, level in scaled), max(level[1] for _, level in scaled))
    first = pictures[0]
    blocks = f", {first.factor}×{first.factor} block maxima" if first.factor > 1 else ""
    _title(figure, f"{trace.model.name}: layer {layer}, all {n_heads} heads ({named}"
                   f"{first.extent[0]}×{first.extent[1]}"
                   f"{blocks})", colspan=n_cols + 1)
    rows, cols = axis_labels(trace, first.extent, cross, numbered=first.long)
    for h, (shown, _) in enumerate(scaled):
        heatmap = Heatmap(figure.ci, row=1 + h // n_cols, col=h % n_cols, colorbar=False)
        heatmap.set_matrix(shown, levels, rows, cols, extent=first.extent, signed=values == "weights" and not log)
        heatmap.plot.setTitle(f"head {h}", size="9pt")
        figure.heatmaps.append(heatmap)
    bar = pg.ColorBarItem(values=levels, colorMap=figure.heatmaps[0].colormap, interactive=False, width=12)
    bar.setImageItem([hm.image for hm in figure.heatmaps])
    figure.ci.addItem(bar, row=1, col=n_cols, rowspan=math.ceil(n_heads / n_cols))


def _name_outer_tiles_only(figure, width: int, height: int) -> None:
    """Where a layer's maps come out flat (a view less than half as tall as wide: at 640 × 480 nine heads
    drew 11 × 11 cells 137 px wide and 67 tall under their upright key labels), the keys are named over the
    top row of tiles only and the queries beside the left column only: every head shares both axes."""
    views = [heatmap.plot.vb for heatmap in figure.heatmaps]
    if all(view.height() >= view.width() / 2 for view in views):
        return
    lefts = sorted({round(view.sceneBoundingRect().left()) for view in views})
    tops = sorted({round(view.sceneBoundingRect().top()) for view in views})
    for heatmap, view in zip(figure.heatmaps, views):
        box = view.sceneBoundingRect()
        heatmap.plot.showAxis("top", round(box.top()) == tops[0])
        heatmap.plot.showAxis("left", round(box.left()) == lefts[0])
    figure.ci.setGeometry(0, 0, width, height)
    QApplication.processEvents()
    _even_map_rows(figure, len(tops), width, height)


def _even_map_rows(figure, n_rows: int, width: int, height: int) -> None:
    """Every row of maps as tall: the top row is taller by its key labels alone (rows 1 … n_rows of the
    layout; Qt had shared the height out in proportion, leaving the top row's maps the flattest)."""
    layout = figure.ci.layout
    plots = [heatmap.plot for heatmap in figure.heatmaps]
    total = sum(max(p.height() for p in plots if round(p.pos().y()) == top)
                for top in sorted({round(p.pos().y()) for p in plots}))
    labels = figure.heatmaps[0].axes["top"].height()
    row = (total - labels) / n_rows
    for index in range(n_rows):
        layout.setRowFixedHeight(1 + index, row + (labels if index == 0 else 0))
    figure.ci.setGeometry(0, 0, width, height)
    QApplication.processEvents()


def grid_picture(trace: Trace, step: int | None = None, values: str = "weights", cross: bool = False,
                 tiles: ReducedMaps | None = None, cancelled: Callable[[], bool] | None = None,
                 progressed: Callable[[int, int], None] | None = None) -> Mosaic:
    """The full grid `attention_figure` draws. Numpy only, so it may run off the GUI thread. A long trace's
    tile of head h of layer l is block_maxima(A_lh) at the grid's block side (long_maps.grid_block), taken
    from `tiles` (the grid filler's kept tiles: a head it holds is not computed again) where given;
    `cancelled()` true raises long_maps.Cancelled; `progressed(done, total)` after each tile. A short
    one is views.grid.mosaic."""
    if not is_long(trace, step, cross):
        return mosaic(trace, upto_step=step, cross=cross, values=values)
    tiles = ReducedMaps() if tiles is None else tiles
    block, (t_q, t_kv) = grid_block(trace, step, cross), extent(trace, step, cross)
    n_layers, n_heads = trace.model.n_layers, trace.model.n_heads
    grid = blank_mosaic(n_layers, n_heads, (math.ceil(t_q / block), math.ceil(t_kv / block)))
    for layer in range(n_layers):
        for head in range(n_heads):
            grid.place(layer, head, tiles.get(trace, layer, [head], block, step, cross, values, cancelled, THREADS))
            if progressed is not None:
                progressed(layer * n_heads + head + 1, n_layers * n_heads)
    return grid


def _grid(figure, trace, grid: Mosaic, values, log, size: tuple[int, int], named: str = "") -> None:
    """The mosaic of every head; the title says "block maxima" only where a tile is smaller than the
    `size` (T_q, T_kv) of the maps it stands for."""
    symbol = "scores S" if values == "scores" else ("log10 A" if log else "weights A")
    reduced = grid.tile_shape[0] < size[0] or grid.tile_shape[1] < size[1]
    _title(figure, f"{trace.model.name}: all {grid.n_layers} layers × {grid.n_heads} heads, {named}{symbol}, "
                   f"{plural(trace.n_tokens, 'token')}" + (" (block maxima)" if reduced else ""))
    heatmap = Heatmap(figure.ci, row=1, col=0)
    GridLegend(heatmap).show(grid, values, log and values == "weights", keep_view=False)   # a scale per kind of layer
    heatmap.plot.setLabels(left="layer", top="head")
    figure.heatmaps.append(heatmap)
