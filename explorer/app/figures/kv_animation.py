"""The KV cache growing as decoding goes on, for a slide: the KV cache panel's occupancy drawn at every
step, as an animated GIF, a lossless animated PNG or an MP4 video, with animation.py's machinery (frames drawn to a
scratch folder, progress and cancel, the file written atomically).

Each frame holds what the panel shows after that step:
  - the bytes each layer's cache holds, in use (filled) against allocated (outline), where
    bytes_l = tokens_l · bytes per token per layer (MHA 2·n_h·d_h, GQA 2·N_KV·d_h, MQA 2·d_h, MLA d_c + d_R);
  - the bytes in use over all layers against the tokens held, up to this step;
  - the cache paged into blocks (Kwon et al. 2023): ceil(tokens_l / block) per layer, the colour the
    share of a block's slots in use.
Every frame has the axes of the last step, so the cache is seen to grow rather than the axes to rescale.
An encoder-decoder's cross-attention K/V (fixed once the encoder has run) is left out: it does not grow.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QApplication

from explorer.app.figures import export_dialogs
from explorer.app.figures.animation import (
    ANIMATION_FILTERS,
    FRAME_MS,
    check_target,
    refused,
    with_progress,
    write_animation,
)
from explorer.core import kv_variants
from explorer.core.trace import Trace
from explorer.core.units import human_bytes
from explorer.drawing import export
from explorer.drawing.colours import figure_colours
from explorer.drawing.figures import font_scale, lay_out, scale_fonts
from explorer.drawing.heatmap import Heatmap
from explorer.drawing.heatmap_axes import text_px
from explorer.views.image_limits import check_image_size

KIB = 1024.0
IN_USE = "#3b7dd8"           # the panel's colours: bytes in use, the allocation's outline, this step
ALLOCATED = "#9aa0a6"
NOW = "#ff2d55"
OFF_SCALE = 20               # allocated / in use beyond which the allocation is named, not drawn (as the panel)


def cache_growth(trace: Trace) -> dict[str, np.ndarray]:
    """Per step: bytes in use and allocated per layer (steps, L), tokens held and bytes in use in all layers."""
    in_use = np.stack([trace.kv_bytes_in_use(step) for step in range(trace.n_steps)])        # (steps, L)
    allocated = np.stack([trace.kv_bytes_allocated(step) for step in range(trace.n_steps)])  # (steps, L)
    tokens = np.cumsum([step.n_new for step in trace.steps])                                   # (steps,)
    return {"in_use": in_use, "allocated": allocated, "tokens": tokens, "totals": in_use.sum(axis=1)}


def kv_cache_figure(trace: Trace, step: int, width: int, height: int, theme: str = "light",
                    text_scale: float = 1.0, block_size: int = kv_variants.DEFAULT_BLOCK_SIZE,
                    growth: dict[str, np.ndarray] | None = None) -> pg.GraphicsLayoutWidget:
    """The cache after `step`, laid out offscreen at width × height in the figure `theme`, its text
    `text_scale` times its size for the image (as the attention figures)."""
    growth = growth if growth is not None else cache_growth(trace)
    in_use, allocated = growth["in_use"][step], growth["allocated"][step]
    with figure_colours(theme):
        figure = pg.GraphicsLayoutWidget(size=(width, height))
        tokens = int(growth["tokens"][step])
        what = (f"KV cache after step {step} of {trace.n_steps - 1}, {tokens} tokens, "
                f"{human_bytes(int(in_use.sum()))} in use")
        title = figure.addLabel(f"{trace.model.name}: {what}", row=0, col=0, colspan=3, size="11pt")
        plots = [figure.addPlot(row=1, col=0), figure.addPlot(row=1, col=1)]
        _layers(plots[0], growth, in_use, allocated)
        _totals(plots[1], growth, step)
        blocks = _blocks(figure, trace, growth, step, block_size)
        scale_fonts(figure, font_scale(width, height) * text_scale)
        lay_out(figure, width, height, theme)
        _fit_title(figure, title, trace.model.name, what, width, height)
        _keep_blocks_title_whole(figure, plots, blocks, width, height)
        thin_layer_ticks(plots[0], len(in_use))
    return figure


def thin_layer_ticks(plot, n_layers: int) -> None:
    """Every `every`-th layer named under the bars, the first `every` of 1, 2, 5, 10, 20, … whose labels
    fit side by side in the bars' width at the axis's font (the widest label and a gap of half a digit):
    at a large text size ten labels ran together ("121518…")."""
    axis = plot.getAxis("bottom")
    metrics = QFontMetricsF(axis.style.get("tickFont") or axis.font())
    needed = metrics.horizontalAdvance(str(n_layers - 1)) + metrics.horizontalAdvance("0") / 2
    per_layer = plot.vb.width() / (n_layers + 0.2)          # the x range is -0.6 … L - 0.4
    every = next(step for step in nice_steps(n_layers) if step * per_layer >= needed or step >= n_layers)
    axis.setTicks([[(layer, str(layer)) for layer in range(0, n_layers, every)]])


def nice_steps(n_layers: int):
    """1, 2, 5, 10, 20, 50, … up to the first at or past `n_layers` (a single label: layer 0)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            yield step * factor
            if step * factor >= n_layers:
                return
        step *= 10


def title_width(label: pg.LabelItem, text: str) -> float:
    """The pixels `text` takes in `label`'s title font (its size is the label's as drawn, in any unit)."""
    font = QFont(label.item.font())
    font.setPixelSize(text_px(label.item))
    return max(QFontMetricsF(font).horizontalAdvance(line) for line in text.split("<br>"))


def _fit_title(figure, title: pg.LabelItem, name: str, what: str, width: int, height: int) -> None:
    """The figure's title within the frame: on one line where it fits, else the model's name on a line of its
    own, else what the cache holds broken after its step too (a long name at 640 px ran off the right edge)."""
    margin = 2 * title_width(title, "00")               # the label's own margins and the layout's edges
    shapes = [f"{name}: {what}", f"{name}:<br>{what}", f"{name}:<br>{what.replace(', ', ',<br>', 1)}"]
    text = next((shape for shape in shapes if title_width(title, shape) + margin <= width), shapes[-1])
    if text != title.text:
        title.setText(text)
        figure.ci.setGeometry(0, 0, width, height)
        QApplication.processEvents()


def _keep_blocks_title_whole(figure, plots, blocks: Heatmap, width: int, height: int) -> None:
    """The blocks' title whole. It gives way to its plot, the other two titles do not, so at a large text
    size they left its column a sliver and "blocks (16)" was cut to "b…": then they go onto two lines, and
    the blocks' column is widened by what its title still lacks."""
    title = blocks.plot.titleLabel
    for attempt in range(4):                             # Qt lays the columns out again at each change
        # the text item draws its document's margin either side of the text: 4 px short of it read "blocks …"
        lacking = title_width(title, title.text) + 2 * title.item.document().documentMargin() + 1 - title.width()
        if lacking <= 0:
            return
        if attempt == 0:
            for label in (plot.titleLabel for plot in plots):
                label.setText(label.text.replace(" in use", "<br>in use", 1) if "per layer" in label.text
                              else label.text.replace(", ", ",<br>", 1))
            # two lines reach up to the figure's title: a third of its line apart, they read as two texts
            figure.ci.layout.setRowSpacing(0, figure.ci.getItem(0, 0).height() / 3)
        else:
            figure.ci.layout.setColumnMinimumWidth(2, blocks.plot.width() + lacking)
        figure.ci.setGeometry(0, 0, width, height)
        QApplication.processEvents()


def _layers(plot, growth, in_use: np.ndarray, allocated: np.ndarray) -> None:
    """Bars per layer: in use, and the allocation's outline unless it dwarfs every step's use."""
    layers = np.arange(len(in_use))
    off_scale = growth["allocated"].max(initial=0) > OFF_SCALE * max(1, growth["in_use"].max(initial=0))
    plot.setTitle("KiB per layer in use" + ("" if off_scale else " / allocated"))
    if not off_scale:
        plot.addItem(pg.BarGraphItem(x=layers, height=allocated / KIB, width=0.7, pen=pg.mkPen(ALLOCATED), brush=None))
    plot.addItem(pg.BarGraphItem(x=layers, height=in_use / KIB, width=0.7, brush=IN_USE, pen=pg.mkPen(IN_USE)))
    top = (growth["in_use"] if off_scale else np.maximum(growth["in_use"], growth["allocated"])).max(initial=1)
    plot.setRange(xRange=(-0.6, len(layers) - 0.4), yRange=(0.0, max(float(top) / KIB, 1e-3) * 1.05), padding=0)
    plot.setLabels(bottom="layer")                        # its ticks: thin_layer_ticks, once laid out
    plot.setMouseEnabled(False, False)


def _totals(plot, growth, step: int) -> None:
    """Bytes in use over all layers against tokens held, the steps so far, this one marked."""
    tokens, totals = growth["tokens"], growth["totals"] / KIB
    plot.setTitle("KiB in use, all layers")
    plot.plot(tokens[: step + 1], totals[: step + 1], pen=IN_USE, symbol="o", symbolSize=5, symbolBrush=IN_USE)
    plot.plot([tokens[step]], [totals[step]], pen=None, symbol="o", symbolSize=11, symbolBrush=NOW)
    plot.setRange(xRange=(0.0, float(tokens[-1]) * 1.02 + 1.0), yRange=(0.0, max(float(totals.max()), 1.0) * 1.05),
                  padding=0)
    plot.setLabels(bottom="tokens")
    plot.setMouseEnabled(False, False)


def _blocks(figure, trace: Trace, growth, step: int, block_size: int) -> Heatmap:
    """The paged cache: one row per layer, one cell per block of the last step, the share in use."""
    per_token = kv_variants.bytes_per_token_per_layer(trace.model)
    held = growth["in_use"][step] // per_token if per_token else np.zeros_like(growth["in_use"][step])
    most = int(-(-int(growth["in_use"][-1].max(initial=0) // max(per_token, 1)) // block_size))
    fill = kv_variants.block_fill(held, block_size)                                   # (L, B)
    shown = np.full((len(held), max(most, 1)), np.nan)
    shown[:, : fill.shape[1]] = np.where(fill > 0, fill, np.nan)
    blocks = Heatmap(figure.ci, row=1, col=2, colorbar=True)
    blocks.set_matrix(shown, (0.0, 1.0), [f"L{i}" for i in range(len(held))], [str(b) for b in range(shown.shape[1])])
    blocks.plot.setTitle(f"blocks ({block_size})")      # short: the narrowest column, beside its colour bar
    return blocks


def export_kv_animation(trace: Trace, path: Path, size: tuple[int, int] = export.DEFAULT_SIZE,
                        theme: str = "light", text_scale: float = 1.0, frame_ms: int = FRAME_MS,
                        progress: Callable[[int, int], None] | None = None,
                        cancelled: Callable[[], bool] | None = None,
                        block_size: int = kv_variants.DEFAULT_BLOCK_SIZE) -> Path:
    """One frame per recorded step (the prefill, then each decoding step) of the cache growing, at `path`."""
    check_target(path, trace)
    if trace.model.is_encoder_only:
        raise export.ExportError(f"Cannot export {path}: an encoder keeps no KV cache; every token is seen at once.")
    width, height = check_image_size(*size)
    growth = cache_growth(trace)

    def draw(step: int, frame: Path) -> Path:
        figure = kv_cache_figure(trace, step, width, height, theme, text_scale, block_size, growth)
        try:
            return export.save_figure(figure, frame, width, height)
        finally:
            figure.close()
            figure.deleteLater()
    return write_animation(path, trace.n_steps, draw, frame_ms, progress, cancelled)


def ask_and_export_kv_animation(parent, trace: Trace, block_size: int = kv_variants.DEFAULT_BLOCK_SIZE) -> None:
    """Ask where and how large, then write the cache's animation under a progress dialog with Cancel."""
    if refused(parent, trace, "An encoder keeps no KV cache: every token is seen at once."):
        return
    path = export_dialogs.ask_path(parent, "Export an animation of the KV cache", "kv_cache.gif", ANIMATION_FILTERS)
    size = export_dialogs.ask_size(parent) if path is not None else None
    if path is None or size is None:
        return
    theme, scale = export_dialogs.figure_theme(parent), export_dialogs.figure_text_scale(parent)
    with_progress(parent, trace.n_steps, lambda progress, cancelled: export_kv_animation(
        trace, path, size, theme, scale, progress=progress, cancelled=cancelled, block_size=block_size))

