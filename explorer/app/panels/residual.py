"""Residual stream: at the selected position, what each layer adds (||a_l||, ||f_l||), the stream's
norm ||h_l||, and the logit lens softmax(Norm(h_l) W_U) beside it, every layer in one view.

The layers run left to right, one column each, so that even 30 layers fit a laptop's width; the
tokens are shown as visible text (a no-break space is '⍽', never '\\xa0'). Computed on the model
thread by explorer.core.attribution.residual_stream, which feeds the position alone against the
decoder's KV cache (one token through the blocks, as the logit lens does) when the decoder ran these ids.

While a position's stream is read, none is shown: the plot is hidden (its place kept, so nothing moves) and the
table has no layer's column or row, so "reading the residual stream…" never stands over another model's layers.

Stop (Esc) cancels a stream being read: the panel says so, with Compute, and reads nothing again until the
person presses it or picks another position, or another run or model comes (base.Panel.stop_work).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

from explorer.app.panels.base import Panel, decoder_view_unavailable
from explorer.app.state.session import Selection
from explorer.app.thread.requests import ResidualStreamJob
from explorer.app.widgets.adaptive import is_wide
from explorer.app.widgets.asking import Asker
from explorer.app.widgets.plot_text import LEGEND
from explorer.app.widgets.text_helpers import readable, selected_position

K = 2                        # lens candidates per layer in the table (its tooltip has them all)
ASKED = 5
TABLE_SCALE = 11 / 12        # the table a step smaller than the text around it, so that 30 layers fit a laptop
ROW_PAD = 3                  # px a table row has above its font's height (16 px rows at 11 px)
NORMS = (("attn_norms", "‖a_l‖"), ("ffn_norms", "‖f_l‖"), ("residual_norms", "‖h_l‖"))
CELL_MARGINS_PX = 10         # a cell's margins beside its text

QWIDGETSIZE_MAX = 16777215     # Qt's "no maximum"
MIN_VIEW_PX = 120            # the least height of the plot's view: less is a strip of ticks


class ResidualPanel(Panel):
    title = "Residual stream"
    object_name = "residual"
    stop_holds = True

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.executor = None                # None: the session's model thread (tests give their own)
        self.plot_view = pg.GraphicsLayoutWidget()
        # the legend in a column of its own beside the plot: inside the view it lay over the lines it names, and
        # in a row above it took 44 px of the height the view needs (the plot hidden in a 408 px panel)
        self.legend = pg.LegendItem(colCount=1, labelTextSize=LEGEND)
        self.plot = self.plot_view.ci.addPlot(row=0, col=0)
        self.plot_view.ci.addItem(self.legend, row=0, col=1)
        # 9 px margins a side by default, and 5 px between ticks and their text: 17 px of the view's height
        self.plot_view.ci.layout.setContentsMargins(2, 2, 2, 0)
        # the plot's layout settles after the panel's resize: its view measured then corrects a guessed overhead
        self.plot.getViewBox().sigResized.connect(self._on_view_resized)
        self.plot.setLabel("bottom", "layer l")
        self.plot.getAxis("bottom").setStyle(tickTextOffset=2)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        policy = self.plot.sizePolicy()          # hidden while a stream is read, its place kept (_clear_stream)
        policy.setRetainSizeWhenHidden(True)
        self.plot.setSizePolicy(policy)
        self.plot.setVisible(False)              # shown with a stream (_draw_norms)
        self.table = QTableWidget(0, 0)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.viewport().installEventFilter(self)      # down a tall dock: columns shared to its width
        self.plot_view.setMinimumHeight(0)
        self.body.addWidget(self.plot_view, 1)
        self.body.addWidget(self.table)
        self.layers_across = True           # layers as columns (a wide dock) or as rows (a tall one)
        self.stream = None
        self.row_px = 0
        self.overhead_px = 0                # the plot's widget less its view, in px, as last measured
        self._fit_table_font()
        self._lay_out_table()
        self.asker = Asker(self, self._on_answer, self.error_line.show_error)
        self.shown_key = None               # (model, ids) of the stream shown
        self.position: int | None = None
        self.set_formula("h_l = h_{l-1} + a_l + f_l,  lens: softmax(Norm(h_l) W_U)")

    def _fit_table_font(self) -> None:
        """The table's font TABLE_SCALE times the panel's, and its rows as tall as that font needs: a fixed
        11 px stayed small in View ▸ Presentation, and fixed 16 px rows would have cut a larger font."""
        font = QFont(self.font())
        if font.pointSizeF() > 0:
            font.setPointSizeF(font.pointSizeF() * TABLE_SCALE)
        else:
            font.setPixelSize(round(font.pixelSize() * TABLE_SCALE))
        self.table.setFont(font)
        self.row_px = QFontMetrics(font).height() + ROW_PAD
        self.table.verticalHeader().setMinimumSectionSize(min(12, self.row_px))
        self.table.verticalHeader().setDefaultSectionSize(self.row_px)
        if self.layers_across:
            self._fit_rows()
        if self.stream is not None:
            self._fit_columns()

    def eventFilter(self, watched, event) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize and not self.layers_across:
            self._share_columns()
        return super().eventFilter(watched, event)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and getattr(self, "row_px", None) is not None:   # (once built)
            self._fit_table_font()

    def resizeEvent(self, event) -> None:
        """Layers across a wide dock, down a tall one; the norms' plot only where it has room."""
        super().resizeEvent(event)
        across = is_wide(event.size().width(), event.size().height())
        if across != self.layers_across:
            self.layers_across = across
            self._lay_out_table()
            if self.stream is not None:
                self._fill_lens(self.stream)
        self._show_plot_if_room()

    def _show_plot_if_room(self) -> None:
        """The norms' plot where its view keeps MIN_VIEW_PX of height, else the table fills the panel: a table of
        fixed height alone left 217 px of a 366 px body blank, above and below it, at 1920x1080."""
        n_layers = len(self.stream.lens_ids) if self.stream is not None else \
            self.trace.model.n_layers if self.trace is not None else 12
        rows = self._table_px() if self.layers_across else (n_layers + 1) * self.row_px + 2 * self.table.frameWidth()
        spare = self.body_widget.height() - rows - self.body.spacing()
        room = spare >= MIN_VIEW_PX + self._plot_overhead()
        self.plot_view.setVisible(room)
        if self.layers_across:
            # with the plot, the rows keep their font's height; alone, they share the panel's whole height
            mode = QHeaderView.ResizeMode.Fixed if room else QHeaderView.ResizeMode.Stretch
            self.table.verticalHeader().setSectionResizeMode(mode)
            if room:       # Fixed keeps a stretched row's height: 25 px rows in a table sized for 16 cut the last
                self._rows_to_font()
            self.table.setMinimumHeight(rows)
            self.table.setMaximumHeight(rows if room else QWIDGETSIZE_MAX)
        else:
            # down a tall dock beside the plot, the rows take the height they need and the plot the rest: with
            # stretched rows a 4-layer model's table took three quarters and left the plot 72 px tall
            self.table.setMaximumHeight(rows if room else QWIDGETSIZE_MAX)
        self.body.setStretchFactor(self.table, 0 if room else 1)

    def _rows_to_font(self) -> None:
        """Every row back to the font's height (row_px), the height the table's fixed height counts on."""
        for row in range(self.table.rowCount()):
            if self.table.rowHeight(row) != self.row_px:
                self.table.setRowHeight(row, self.row_px)

    def _on_view_resized(self, view) -> None:
        """The plot laid out with a view under MIN_VIEW_PX (its overhead was guessed before it was first laid
        out): decide again with the overhead now measured, which gives the rows the panel."""
        if self.plot_view.isVisible() and 0 < view.sceneBoundingRect().height() < MIN_VIEW_PX:
            self._show_plot_if_room()

    def _plot_overhead(self) -> int:
        """The px of the plot's widget that are not its view (axes, margins): measured where the plot
        is laid out, else the last measure, else an estimate from the font (the axis's ticks and title)."""
        box = self.plot.getViewBox().sceneBoundingRect()
        measured = self.plot_view.height() - int(box.height())
        # (laid out and not stale; a plot hidden while a stream is read lays out no axis: it would measure too little)
        if self.plot_view.isVisible() and self.plot.isVisible() and box.height() > 0 and 40 <= measured <= 200:
            self.overhead_px = measured
        # under rather than over: a plot guessed out of room is never laid out, so never measured
        margins = self.plot_view.ci.layout.getContentsMargins()
        return self.overhead_px or int(margins[1] + margins[3]) + 2 * self.fontMetrics().height() + 8

    def _lay_out_table(self) -> None:
        """Every row of the table stays in view: the table's height is fixed when the layers run across,
        and the rows share what the panel has when they run down."""
        labels = [f"{name} {rank + 1}" for rank in range(K) for name in ("lens", "p")] + [n for _, n in NORMS]
        table, stretch = self.table, QHeaderView.ResizeMode.Stretch
        if self.layers_across:
            table.setColumnCount(0)                # the layers' columns: the stream's (_fill_lens)
            table.setRowCount(len(labels))
            table.setVerticalHeaderLabels(labels)
            table.horizontalHeader().setSectionResizeMode(stretch)
            table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
            self._fit_rows()
        else:
            table.setRowCount(0)                   # the layers' rows: the stream's (_fill_lens)
            table.setColumnCount(len(labels))
            table.setHorizontalHeaderLabels(labels)
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)     # (_share_columns)
            table.verticalHeader().setSectionResizeMode(stretch)
            table.setMinimumHeight(0)
            table.setMaximumHeight(QWIDGETSIZE_MAX)
        self._show_plot_if_room()

    def answer_due(self) -> bool:
        """While a position's stream is read the panel shows none: an export taken meanwhile saved that cleared
        panel (issue 22), so it waits for this."""
        return self.stream is None and self.asker.busy

    def unavailable(self, trace) -> str | None:
        return decoder_view_unavailable(trace, "The residual stream's logit lens")

    def forget(self) -> None:
        """No stream of another model or run, and none being read."""
        self.position = None
        self._clear_stream()

    def _clear_stream(self) -> None:
        """No stream shown: no plot, whose axis spanned the last stream's layers, and no layer's column (across) or
        row (down) in the table, whose L0…L{n-1} named them: after a switch, another model's (issue 22, M3). The
        plot's widget keeps its size, so the panel's layout does not move under the words."""
        self.stream = self.shown_key = None
        self._clear_plot()
        self.plot.setVisible(False)
        self.table.clearContents()
        if self.layers_across:
            self.table.setColumnCount(0)
            self._fit_rows()
        else:
            self.table.setRowCount(0)

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        position = selected_position(trace, selection) if trace is not None else None
        if position is None:
            return
        self.position = position
        ids = tuple(int(i) for i in trace.token_ids[: position + 1])
        key = (trace.model.name, ids)
        if key != self.shown_key:                  # no other position's stream beside this one while it is read
            self._clear_stream()
            self.set_formula(f"h_l at position {position}: reading the residual stream…")
        if self.asker.ask(key, ResidualStreamJob(ids, position, ASKED)):
            self.readout.setText(f"reading the residual stream at position {position}…")
        stopped = key == self.asker.stopped
        if stopped:
            self.set_formula(f"h_l at position {position}: stopped")
        self.show_stopped(f"reading the residual stream at position {position}" if stopped else None)

    def _on_answer(self, key, stream) -> None:
        ids = key[1]
        self.stream, self.shown_key = stream, key
        self._show_plot_if_room()
        self._draw_norms(stream)
        self._fill_lens(stream)
        token = readable(self.session.display_token(ids[-1])) if ids else ""
        self.set_formula(f"h_l at position {stream.position} ('{token}'): what each layer adds, and the "
                         "logit lens softmax(Norm(h_l) W_U)")
        self.readout.setText(f"position {stream.position}: ||h_L|| = {float(stream.residual_norms[-1]):.2f}")

    def _clear_plot(self) -> None:
        """No lines, and no names in the legend for lines gone (the legend is not the plot's own)."""
        self.plot.clear()
        self.legend.clear()

    def _draw_norms(self, stream) -> None:
        self._clear_plot()
        layers = np.arange(len(stream.residual_norms))
        for values, name, colour in ((stream.attn_norms, "||a_l|| attention", "#1f77b4"),
                                     (stream.ffn_norms, "||f_l|| FFN", "#ff7f0e"),
                                     (stream.residual_norms, "||h_l|| stream", "#444444")):
            curve = self.plot.plot(layers, np.asarray(values, dtype=float), pen=pg.mkPen(colour, width=2),
                                   symbol="o", symbolSize=4, symbolBrush=colour)
            self.legend.addItem(curve, name)
        self.plot.setXRange(-0.5, len(layers) - 0.5, padding=0)
        self.plot.setVisible(True)
        # layers are whole numbers: ticks every 1, 2, 5, 10… layers, never at "1.5" (pyqtgraph's own choice)
        step = next(step for step in (1, 2, 5, 10, 20, 50, 100) if len(layers) <= 10 * step)
        self.plot.getAxis("bottom").setTickSpacing(levels=[(step, 0)])

    def _fit_rows(self) -> None:
        """Across: the table at least as tall as its header and rows (no row is ever scrolled away)."""
        self.table.setMinimumHeight(self._table_px())
        self._show_plot_if_room()

    def _table_px(self) -> int:
        """Across: the height of the table's header and rows, and of its scroll bar where the columns need one."""
        table = self.table
        header = max(table.horizontalHeader().sizeHint().height(), table.fontMetrics().height() + 6)
        rows = table.rowCount() * self.row_px
        columns = table.columnCount() * table.horizontalHeader().minimumSectionSize()
        room = self.body_widget.width() - table.verticalHeader().sizeHint().width() - 2 * table.frameWidth()
        scroll = table.horizontalScrollBar().sizeHint().height() if columns > room else 0
        return header + rows + scroll + 2 * table.frameWidth() + 2

    def _fill_lens(self, stream) -> None:
        n_layers = len(stream.lens_ids)
        if self.layers_across:
            self.table.setColumnCount(n_layers)
            self.table.setHorizontalHeaderLabels([f"L{layer}" for layer in range(n_layers)])
        else:
            self.table.setRowCount(n_layers)
            self.table.setVerticalHeaderLabels([f"L{layer}" for layer in range(n_layers)])
        for layer in range(n_layers):
            for index, item in enumerate(self._cells(stream, layer)):
                self.table.setItem(index, layer, item) if self.layers_across else self.table.setItem(layer, index, item)
        self._fit_columns()
        if self.layers_across:
            self._fit_rows()

    def _fit_columns(self) -> None:
        """Across, no layer's column narrower than the widest cell ("0…" for 0.12 at 1366 px): past the panel's
        width the table scrolls sideways instead. Down, each column its own width (_share_columns)."""
        table = self.table
        if not self.layers_across:
            table.horizontalHeader().setMinimumSectionSize(0)
            self._share_columns()
            return
        widest = max((self._cells_px(c) for c in range(table.columnCount())), default=0)
        table.horizontalHeader().setMinimumSectionSize(widest)

    def _cells_px(self, column: int) -> int:
        """The width the widest cell of `column` needs, with the cell's margins."""
        table, metrics = self.table, self.table.fontMetrics()
        return max((metrics.horizontalAdvance(table.item(r, column).text()) for r in range(table.rowCount())
                    if table.item(r, column) is not None), default=0) + CELL_MARGINS_PX

    def _share_columns(self) -> None:
        """Down a tall dock, each column as wide as its header and cells need and the spare shared out; narrower
        than that, the numbers keep their widths and the lens's tokens share the rest, elided with "…" (their
        tooltip has them all). Every column had the widest token's width, and at 1366 px the last one, ‖h_l‖,
        was cut under a scroll bar."""
        table = self.table
        header, n = table.horizontalHeader(), table.columnCount()
        if n == 0:
            return
        needed = [max(header.sectionSizeHint(c), self._cells_px(c)) for c in range(n)]
        tokens = [c for c in range(n) if c < 2 * K and c % 2 == 0]           # the lens's columns (_lay_out_table)
        room, total = table.viewport().width(), sum(needed)
        if total <= room:
            widths = [need + (room - total) // n for need in needed]
        else:
            numbers = sum(need for c, need in enumerate(needed) if c not in tokens)
            share = max(0, room - numbers) // max(1, len(tokens))
            widths = [max(header.sectionSizeHint(c), share) if c in tokens else need for c, need in enumerate(needed)]
        widths[-1] += max(0, room - sum(widths))                               # to the edge
        for column, width in enumerate(widths):
            if table.columnWidth(column) != width:
                table.setColumnWidth(column, width)

    def _cells(self, stream, layer: int) -> list[QTableWidgetItem]:
        """One layer's cells: the lens's top K tokens and their p, then the three norms."""
        texts = [readable(self.session.display_token(int(i))) for i in stream.lens_ids[layer]]
        probs = [float(p) for p in stream.lens_probs[layer]]
        tip = f"layer {layer}: " + ",  ".join(f"'{t}' {p:.3f}" for t, p in zip(texts, probs))
        cells = []
        for rank in range(min(K, len(texts))):
            cells += [QTableWidgetItem(texts[rank]), QTableWidgetItem(f"{probs[rank]:.2f}")]
        cells += [QTableWidgetItem(f"{float(getattr(stream, name)[layer]):.0f}") for name, _ in NORMS]
        for cell in cells:
            cell.setToolTip(tip)
            cell.setTextAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)   # (rows may stretch)
        return cells
