"""KV cache: live occupancy of the model's real cache, paged into blocks, and what the same
model would keep under MHA, GQA, MQA and MLA.

Bytes per token per layer (DeepSeek-V2, Table 1): MHA 2·n_h·d_h, GQA 2·n_g·d_h,
MQA 2·d_h, MLA d_c + d_R, times the dtype's bytes; blocks as in PagedAttention
(Kwon et al. 2023): ceil(tokens / block) per layer, the last one partly filled.
An encoder-decoder also holds each decoder layer's cross-attention K = C W^K and
V = C W^V, computed once from the encoder output C: N_KV · S · (d_QK + d_V) numbers
per layer, drawn beside the self-attention cache and flat while it grows.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QFont
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.app.figures import animation, export_dialogs, kv_animation
from explorer.app.panels.base import Panel, WrappedText
from explorer.app.state.session import Selection
from explorer.app.widgets.kv_occupancy import CROSS as CROSS_COLOUR
from explorer.app.widgets.kv_occupancy import MIN_PLOT_PX, MIN_VIEW_PX, OccupancyPlots
from explorer.app.widgets.occupancy_room import OccupancyRoom
from explorer.core import kv_variants
from explorer.core.units import human_bytes as human
from explorer.drawing import export
from explorer.drawing.heatmap import Heatmap
from explorer.views import trace_views
from explorer.views.caches import PerItem
from explorer.views.words import plural, step_name


def step_in_use(step) -> tuple[int, int]:
    """(tokens the step added, bytes in use in all layers' caches after it)."""
    return step.n_new, sum(layer.kv_bytes_in_use for layer in step.layers)

OFF_SCALE = 20               # allocated / in use beyond which the allocation is written, not drawn
NO_CACHE = "An encoder keeps no KV cache: every token is seen at once."
LONG_TOKENS = 2048           # a trace from which a raise draws the occupancy and the blocks in turns of their own


class KVCachePanel(Panel):
    title = "KV cache"
    object_name = "kv_cache"

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.body.addWidget(self.summary)
        # A bottom dock is wide and short: the occupancy plots and the paged grid side by side in the
        # first tab, read at first sight (above one another, scrolled, in a short narrow one); the variants'
        # table in the second.
        # The plots are built when first drawn, one a turn when the tab is raised (_drawing): their four PlotItems
        # and their first drawing in the turn that built the panel held the window ~130 ms at 8,000 tokens.
        self.plots = OccupancyPlots(built=False)
        self._blocks: Heatmap | None = None
        self.room = OccupancyRoom(self.plots, self._blocks_section(), self.block_view)
        self.occupancy = self.room.splitter
        self.step_totals = PerItem(step_in_use)        # a decoding step sums the one new step's layers
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.room, "Occupancy")
        self.tabs.addTab(self._variants_section(), "MHA / GQA / MQA / MLA")
        self.body.addWidget(self.tabs, 1)
        self.total_in_use = 0
        self.total_allocated = 0
        self.cross_bytes = np.zeros(0, dtype=np.int64)      # per layer: the fixed cross-attention K/V
        self.held = np.zeros(0, dtype=np.int64)
        self.variant_rows: list = []          # the variants' table as last drawn: (cells, native) per row

    # ----- the plots, built when first needed -----------------------------------------------
    def plots_built(self) -> bool:
        return self.plots.built

    def build_plots(self) -> Iterator[None]:
        """The occupancy plots built, a piece a turn (OccupancyPlots.building), each dressed with its labels and menus
        in the turn that completes it."""
        plots = self.plots
        for plot in plots.building():
            if plot is not None:
                self._dress(plot, plot is plots.total_plot)
            yield

    def _dress(self, plot: pg.PlotItem, against_tokens: bool) -> None:
        plot.setLabels(bottom="tokens" if against_tokens else "layer")
        # Counts and KiB have their unit in the label: pyqtgraph's automatic SI prefix would rescale an
        # almost empty range (an encoder caches nothing) to "tokens (x0.001)".
        for side in ("bottom", "left"):
            plot.getAxis(side).enableAutoSIPrefix(False)
        plot.getViewBox().setMinimumSize(MIN_PLOT_PX, MIN_PLOT_PX)     # the room's least size follows (fit)
        if against_tokens:
            plot.getViewBox().menu.addActions(self.export_actions())
        else:
            self.add_to_plot_menu(plot)

    @property
    def layer_plot(self) -> pg.PlotItem:
        self.plots_now()
        return self.plots.layer_plot

    @property
    def total_plot(self) -> pg.PlotItem:
        self.plots_now()
        return self.plots.total_plot

    @property
    def step_line(self) -> pg.InfiniteLine:
        self.plots_now()
        return self.plots.step_line

    @property
    def blocks(self) -> Heatmap:
        """The paged blocks' grid (layers x blocks), built when first asked for."""
        if self._blocks is None:
            # The colour bar is the legend: a cell's colour is the share of that block's slots holding
            # tokens, blank where no block is allocated. (It is made with the first matrix.)
            blocks = self._blocks = Heatmap(self.block_view.ci, colorbar=True)
            blocks.plot.setLabels(top="block")        # the rows say L0, L1, ...: a "layer" label overlapped them
            blocks.on_hover = self._hover_block
            blocks.on_click = lambda layer, _block: self.select(layer=layer)
        return self._blocks

    def _blocks_section(self) -> QWidget:
        section = QWidget()
        layout = QVBoxLayout(section)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        row = QHBoxLayout()
        self.block_box = QSpinBox()
        self.block_box.setRange(1, 4096)
        self.block_box.setValue(kv_variants.DEFAULT_BLOCK_SIZE)
        self.block_box.valueChanged.connect(lambda _: self.refresh())
        self.paging_label = WrappedText()          # wraps in a narrow column (a 1366 px window cut it at the edge)
        row.addWidget(QLabel("paged, block size"))
        row.addWidget(self.block_box)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.paging_label)
        self.block_view = pg.GraphicsLayoutWidget()
        self.block_view.setMinimumSize(MIN_PLOT_PX + 110, MIN_VIEW_PX)     # its grid is built by `blocks`
        layout.addWidget(self.block_view, 1)
        self.block_legend = QLabel("colour: share of a block's slots in use · blank: no block")
        layout.addWidget(self.block_legend)
        return section

    def _variants_section(self) -> QWidget:
        section = QWidget()
        layout = QVBoxLayout(section)
        layout.setContentsMargins(0, 0, 0, 0)
        self.grouping = QLabel()
        self.grouping.setWordWrap(True)
        self.grouping.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.grouping)
        self.table = QTableWidget(0, 6)
        self.table.setHorizontalHeaderLabels(["variant", "K/V heads", "bytes / token", "now",
                                              "at context length", "vs MHA"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout.addWidget(self.table, 1)
        return section

    def make_export_actions(self) -> list:
        def save_table():
            trace = self.trace
            if trace is None or not trace.steps:
                return
            path = export_dialogs.ask_path(self, "Export the KV-cache comparison", "kv_variants.csv", "CSV (*.csv)")
            if path is not None:
                text = kv_variants.to_csv(kv_variants.info_comparison(trace.model, trace.n_tokens))
                export_dialogs.run_reporting(self, lambda: export.write_text(path, text))

        action = QAction("Export the variant comparison as CSV…", self)
        action.triggered.connect(save_table)
        self.animate_action = QAction(f"Export an animation of the cache growing ({animation.formats_label()})…",
                                      self)
        self.animate_action.triggered.connect(lambda: kv_animation.ask_and_export_kv_animation(
            self, self.trace, self.block_box.value()))
        self._offer_animation(self.trace)
        self.session.trace_changed.connect(self._offer_animation)
        return super().make_export_actions() + [self.animate_action, action]

    def _offer_animation(self, trace) -> None:
        animation.offer_animation(self.animate_action, trace, NO_CACHE)

    # ----- drawing ---------------------------------------------------------------------------
    def unavailable(self, trace) -> str | None:
        """An encoder keeps no cache: the panel says so alone, its plots hidden (a decoder's plots drawn
        before a switch to an encoder stayed up under that line)."""
        return NO_CACHE if trace.steps and trace.model.is_encoder_only else None

    def redraw(self) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            self.summary.setText("No cache yet: run the model.")
            self.set_formula("cache bytes = Σ_l tokens_l · bytes per token per layer")
            return
        self._draw_variants(trace)

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        # Raised (or first shown) with its plots still to build, or at a long trace: one piece a turn.
        built = self.plots_built() and self._blocks is not None
        self.draw_in_parts(self._drawing(trace, selection),
                           in_turns=self.raising and (not built or trace.n_tokens >= LONG_TOKENS))

    def _drawing(self, trace, selection: Selection) -> Iterator[None]:
        """The occupancy plots, then the paged blocks, each built if it is not yet, yielding after each piece of
        work that a turn of the event loop can hold: a plot or its items built, the blocks' grid built, the plots
        drawn, the blocks drawn. The first piece, in the raise's own turn, builds nothing. Figures built in these
        turns are drawn out of sight and painted after the last piece, at the size they keep, the plots then the
        blocks: each piece painted its half-built figure again (a plot built, then its paint, in one turn held the
        window up to ~90 ms at 8,000 tokens); the plots painted while the blocks were still to build shared a turn
        with a piece of that (31-40 ms), and were painted again, as were the blocks, once the panel's "Drawing…"
        line left them its height."""
        first = not self.plots_built() or self._blocks is None
        if first:
            self.summary.setText(f"Drawing the cache of {plural(trace.n_tokens, 'token')}…")
        unpainted = [view for view, built in ((self.plots, self.plots_built()), (self.block_view, self._blocks))
                     if not built and self.drawing]
        for view in unpainted:
            view.setUpdatesEnabled(False)
        try:
            if not self.plots_built():
                yield                        # the raise's turn lays out and paints the panel's text and table
            yield from self.build_plots()
            if self._blocks is None:
                _ = self.blocks
                yield
            step = trace.n_steps - 1 if selection.step is None else selection.step
            self._draw_occupancy(trace, step, selection.layer)
            yield
            self._draw_blocks(selection.layer)
            self._draw_grouping(trace, selection.head)
            if unpainted:
                yield                        # painted from the next turn, once the panel's "Drawing…" is gone
                self._paint_blocks_later(unpainted)
        finally:
            for view in unpainted:           # a drawing dropped part way leaves nothing unpainted
                if shiboken6.isValid(view):  # (nor fails as the panel is deleted)
                    view.setUpdatesEnabled(True)

    def _paint_blocks_later(self, unpainted: list[QWidget]) -> None:
        """The blocks' figure, if out of sight, painted a turn after the plots: the two painted in one turn, with the
        panel laid out again as its "Drawing…" line went, held the window 34-46 ms at 8,000 tokens."""
        view = self.block_view
        if view in unpainted:
            unpainted.remove(view)
            QTimer.singleShot(0, view, lambda: view.setUpdatesEnabled(True))

    def _draw_occupancy(self, trace, step: int, layer: int) -> None:
        self.plots_now()
        in_use = trace.kv_bytes_in_use(step)
        allocated = trace.kv_bytes_allocated(step)
        per_token = kv_variants.bytes_per_token_per_layer(trace.model)
        self.held = in_use // per_token if per_token else np.zeros_like(in_use)
        self.total_in_use, self.total_allocated = int(in_use.sum()), int(allocated.sum())
        self.cross_bytes = trace_views.cross_kv_bytes(trace)
        cross = bool(self.cross_bytes.any())
        # A preallocated cache dwarfs the tokens in it: past OFF_SCALE times, the allocation is named in
        # the title instead of drawn, so the bars in use stay readable.
        off_scale = allocated.max(initial=0) > OFF_SCALE * max(1, in_use.max(initial=0))
        if off_scale:
            each = human(int(allocated.max()))
            self.plots.title_layers(f"KiB per layer in use (allocated: {each} each)",
                                    f"KiB per layer in use (of {each} each)", "KiB per layer in use")
        else:
            self.plots.title_layers("KiB per layer in use / allocated", "KiB in use / allocated")
        self.plots.draw_layers(in_use, None if off_scale else allocated, self.cross_bytes, layer)
        added, totals = np.asarray(self.step_totals(trace.steps), dtype=np.int64).reshape(-1, 2).T
        tokens = np.cumsum(added)
        self.plots.draw_totals(tokens, totals, step, float(self.cross_bytes.sum()))
        self.summary.setText(
            f"<b>{human(self.total_in_use)}</b> in use of {human(self.total_allocated)} allocated "
            f"after {step_name(step)} of {trace.n_steps - 1} ({plural(int(tokens[step]), 'token')}) · "
            f"{human(per_token * len(in_use))} per token over {len(in_use)} layers at {trace.model.dtype}"
            + (self._cross_summary(trace) if cross else ""))
        self.set_formula(f"bytes = Σ_l tokens_l · {self._formula_text(trace.model)}"
                         f" = {self.total_in_use:,} B in use"
                         + (f";  cross K/V = Σ_l N_{{KV}} · S · (d_{{QK}} + d_V) · "
                            f"{trace_views.element_bytes(trace.model)} = {int(self.cross_bytes.sum()):,} B, fixed"
                            if cross else ""))

    def _cross_summary(self, trace) -> str:
        source = int(trace.steps[0].layers[0].cross.k.shape[1])
        return (f"<br><span style='color:{CROSS_COLOUR}'>■</span> cross-attention K/V of the encoder output C: "
                f"<b>{human(int(self.cross_bytes.sum()))}</b> for {source} source tokens, computed once and "
                f"fixed while the <span style='color:#3b7dd8'>■</span> self-attention cache grows by one "
                f"token per step")

    def _formula_text(self, info) -> str:
        b = kv_variants.dtype_bytes(kv_variants.cache_dtype(info))
        if info.attention == "mla" and info.mla_rank:
            return f"(d_c + d_R) · {b} = ({info.mla_rank} + {info.mla_rope_dim}) · {b}"
        if info.attention == "mha":
            return f"2 · n_h · d_h · {b} = 2 · {info.n_heads} · {info.d_qk} · {b}"
        return f"2 · N_{{KV}} · d_h · {b} = 2 · {info.n_kv_heads} · {info.d_qk} · {b}"

    def _draw_blocks(self, layer: int) -> None:
        block = self.block_box.value()
        fill = kv_variants.block_fill(self.held, block)                      # (L, B)
        shown = np.where(fill > 0, fill, np.nan) if fill.size else np.zeros((len(self.held), 1))
        self.blocks.set_matrix(shown, (0.0, 1.0), [f"L{i}" for i in range(len(self.held))],
                               [str(b) for b in range(shown.shape[1])], keep_view=True)
        self.blocks.highlight(layer, None)
        n_blocks = -(-self.held // block)
        slots = int(n_blocks.sum()) * block
        fragmentation = 1.0 - int(self.held.sum()) / slots if slots else 0.0
        self.paging_label.set_plain(f"{int(n_blocks.sum())} blocks, internal fragmentation "
                                    f"{fragmentation:.1%} ({slots - int(self.held.sum())} empty slots)")

    def _hover_block(self, layer, block) -> None:
        if layer is None:
            return
        size = self.block_box.value()
        filled = int(np.clip(self.held[layer] - block * size, 0, size))
        self.readout.setText(f"layer {layer}, block {block}: {filled}/{size} slots hold tokens; "
                             f"layer holds {plural(int(self.held[layer]), 'token')}")

    def _draw_grouping(self, trace, head: int) -> None:
        info = trace.model
        if info.attention == "mla" and info.mla_rank:
            shape = kv_variants.shape_from_info(info)
            cached = kv_variants.native_variant(shape).elements_per_layer
            mha = kv_variants.variants(shape)[0].elements_per_layer          # the table's MHA row
            # MHA counted as the table counts it, 2·N_Q·d_h (DeepSeek-V2's): the sentence counted each head's RoPE key
            # too and said 6.0× over the table's 4.8× (drive27)
            self.grouping.setText(
                f"MLA caches the latent c_KV ∈ ℝ<sup>T×{info.mla_rank}</sup> and the RoPE key "
                f"k<sub>R</sub> ∈ ℝ<sup>T×{info.mla_rope_dim}</sup>: {cached} numbers per token per layer, "
                f"where MHA over the same {info.n_heads} heads caches 2·N<sub>Q</sub>·d<sub>h</sub> = {mha} "
                f"({mha / max(cached, 1):.1f}× more, the table's MHA row).")
            return
        boxes = []
        for kv in range(info.n_kv_heads):
            heads = trace.query_heads_of(kv)
            names = " ".join(f"<b>Q{h}</b>" if h == head else f"Q{h}" for h in heads)
            colour = "#ffb000" if head in heads else "#3b7dd8"
            boxes.append(f"<span style='color:{colour}'>[KV{kv} ← {names}]</span>")
        label = {"mha": "MHA: one K/V head per query head", "mqa": "MQA: one K/V head shared by all",
                 "gqa": f"GQA: {info.n_heads // max(1, info.n_kv_heads)} query heads per K/V head"}
        self.grouping.setText(f"{label.get(info.attention, info.attention)} &nbsp; " + " ".join(boxes))

    def _draw_variants(self, trace) -> None:
        """The variants' table; its items are made again only when a cell's text changes (a decoding step
        changes the bytes "now" of each row, seldom their text at a byte unit's rounding)."""
        info = trace.model
        rows = kv_variants.info_comparison(info, trace.n_tokens)
        context = kv_variants.info_comparison(info, info.max_positions)
        table = [([row.variant.name + ("  ◀ this model" if row.variant.native else ""),
                   "–" if row.variant.kv_heads is None else str(row.variant.kv_heads),
                   human(row.bytes_per_token), human(row.bytes_total), human(far.bytes_total),
                   f"{row.ratio_to_mha:.3f}×"], row.variant.native) for row, far in zip(rows, context)]
        if table == self.variant_rows:
            return
        self.variant_rows = table
        self.table.setRowCount(len(rows))
        bold = QFont()
        bold.setBold(True)
        for i, (cells, native) in enumerate(table):
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if native:
                    item.setFont(bold)
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()
