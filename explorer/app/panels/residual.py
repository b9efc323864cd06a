"""Residual stream: at the selected position, what each layer adds (||a_l||, ||f_l||), the stream's
norm ||h_l||, and the logit lens softmax(Norm(h_l) W_U) beside it, every layer in one view.

The norms' plot is shown wherever its view keeps MIN_VIEW_PX each way, the table below or beside it where room
remains and alone where no plot fits (residual_room.arrange). The table's layers run left to right, one column
each, where it spans a wide panel (even 30 layers fit a laptop's width), and down beside the plot or in a tall
dock; the tokens are shown as visible text (a no-break space is '⍽', never '\\xa0'). Computed on the model
thread by explorer.core.attribution.residual_stream, which feeds the position alone against the
decoder's KV cache (one token through the blocks, as the logit lens does) when the decoder ran these ids.

While a position's stream is read the panel shows its working state (base.Panel: the note says what it reads,
its views hidden), never an empty table nor another model's layers.

Stop (Esc) cancels a stream being read: the panel says so, with Compute, and reads nothing again until the
person presses it or picks another position, or another run or model comes (base.Panel.stop_work).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QBoxLayout, QHeaderView, QSizePolicy, QTableWidget, QTableWidgetItem

from explorer.app.panels.base import Drawn, Panel, decoder_view_unavailable, under_words
from explorer.app.panels.residual_room import CELL_MARGINS_PX, LABELS, NORMS, K, LensTable, Room, arrange
from explorer.app.state.session import Selection
from explorer.app.thread.requests import ResidualStreamJob
from explorer.app.widgets.adaptive import is_wide
from explorer.app.widgets.asking import Asker
from explorer.app.widgets.plot_text import LEGEND
from explorer.app.widgets.text_helpers import readable, selected_position

ASKED = 5
TABLE_SCALE = 11 / 12        # the table a step smaller than the text around it, so that 30 layers fit a laptop
ROW_PAD = 3                  # px a table row has above its font's height (16 px rows at 11 px)

QWIDGETSIZE_MAX = 16777215     # Qt's "no maximum"
MIN_VIEW_PX = 120            # the least size of the plot's view either way: less is a strip of ticks


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
        # at its own height, at the top: stretched to the plot's, its rows spread and each name sat up to 100 px
        # above its line's sample (the name at the top of its row, the sample in the middle; drive23)
        self.legend.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.plot_view.ci.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop)
        # 9 px margins a side by default, and 5 px between ticks and their text: 17 px of the view's height
        self.plot_view.ci.layout.setContentsMargins(2, 2, 2, 0)
        # the plot's layout settles after the body's resize: its view measured then corrects a guessed overhead
        self.plot.getViewBox().sigResized.connect(self._on_view_resized)
        self.plot.setLabel("bottom", "layer l")
        self.plot.getAxis("bottom").setStyle(tickTextOffset=2)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        # the plot takes what the table leaves: a graphics view's own hint is the size it last had
        self.plot_view.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.table = LensTable()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.body.addWidget(self.plot_view, 1)
        self.body.addWidget(self.table)
        self.layers_across = True           # the table's layers as columns, or as rows (_arrange)
        self.stream = None
        self.texts: list[list[str]] = []    # the stream's cells, as shown, layer by layer (_texts)
        self.row_px = 0
        self.overhead = (0, 0)              # the plot's widget less its view, across and down, as last measured
        self._arranging = False
        self._fit_table_font()
        self._lay_out_table()
        self.asker = Asker(self, self._on_answer, self._on_failure)
        self.shown_key = None               # (model, ids) of the stream shown
        self.position: int | None = None
        self.set_formula("h_l = h_{l-1} + a_l + f_l,  lens: softmax(Norm(h_l) W_U)")
        self.table.viewport().installEventFilter(self)      # down: columns shared to its width
        self.body_widget.installEventFilter(self)           # the body's room places the plot and table
        self._arrange()

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
        if self.stream is not None:
            self._fit_columns()
            self._arrange()

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            if watched is self.body_widget:
                self._arrange()
            elif watched is self.table.viewport() and not self.layers_across:
                self._share_columns()
        return super().eventFilter(watched, event)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and getattr(self, "row_px", None) is not None:   # (once built)
            self._fit_table_font()

    # ----- the working state ---------------------------------------------------------------------------
    def drawn(self) -> Drawn:
        """The base contract's state, and "working" while a position's stream is read and none is shown: the views
        are hidden then, where an empty table's row names stood alone."""
        drawn = super().drawn()
        if drawn.kind == "trace" and self.answer_due():
            return Drawn("working", why=f"Reading the residual stream at position {self.position}…")
        return drawn

    def answer_due(self) -> bool:
        """While a position's stream is read the panel shows none: an export taken meanwhile saved that cleared
        panel (issue 22), so it waits for this."""
        return self.stream is None and self.asker.busy

    def stop_work(self) -> None:
        super().stop_work()
        self.show_state()                   # no longer reading: it says it stopped (show_stopped)

    def _on_failure(self, message: str) -> None:
        self.error_line.show_error(message)
        self.show_state()

    # ----- where the plot and the table go -----------------------------------------------------------------
    def _arrange(self) -> None:
        """The plot and the table placed in the body's room (residual_room.arrange), the table's layers across or
        down as it says; neither while no stream is shown."""
        if self._arranging:
            return
        self._arranging = True
        try:
            if self.stream is None:
                self.plot_view.hide()
                self.table.hide()
                return
            body = self.body_widget.size()
            needs = self.table.needs(self.texts, self.row_px, body.width(), self.layers_across, self._plot_least(),
                                     self.body.spacing())
            room = arrange(body.width(), body.height(), is_wide(self.width(), self.height()), needs)
            if room.across != self.layers_across:
                self.layers_across = room.across
                self._lay_out_table()
                self._fill_lens(self.stream)
            self._place(room)
        finally:
            self._arranging = False

    def _place(self, room: Room) -> None:
        """The parts shown and sized as `room` says. Under the plot, or down beside it, the rows keep their font's
        height (the table scrolls to the rest); alone, or across beside it, they share the table's height."""
        table, below = self.table, room.plot and not room.beside
        direction = QBoxLayout.Direction.LeftToRight if room.beside else QBoxLayout.Direction.TopToBottom
        if self.body.direction() != direction:
            self.body.setDirection(direction)
        self.plot_view.setVisible(room.plot)
        table.setVisible(room.table)
        fixed = room.plot and not (room.beside and room.across)
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed if fixed else
                                                    QHeaderView.ResizeMode.Stretch)
        if fixed:          # Fixed keeps a stretched row's height: 25 px rows in a table sized for 16 cut the last
            self._rows_to_font()
        # across, every row is in sight: a vertical scroll bar would narrow the columns' room until the sideways one
        # came and stayed, the last row under it (seen at 1920x1080, 1380 px of columns in 1386 px)
        policy = Qt.ScrollBarPolicy.ScrollBarAlwaysOff if room.across else Qt.ScrollBarPolicy.ScrollBarAsNeeded
        table.setVerticalScrollBarPolicy(policy)
        table.setMinimumHeight(room.height if room.across else 0)
        table.setMaximumHeight(room.height if below else QWIDGETSIZE_MAX)
        table.setMaximumWidth(room.width if room.beside else QWIDGETSIZE_MAX)
        table.preferred = QSize(room.width if room.beside else 0, room.height if below else 0)
        table.updateGeometry()
        self.body.setStretchFactor(table, 0 if room.plot else 1)

    def _plot_least(self) -> tuple[int, int]:
        """The plot's widget whose view is MIN_VIEW_PX each way: the overhead as last measured (_on_view_resized),
        else guessed from the font and the legend, under rather than over: a plot guessed out of room is never laid
        out, so never measured."""
        left, top, right, bottom = self.plot_view.ci.layout.getContentsMargins()
        metrics = self.fontMetrics()
        across = self.overhead[0] or int(left + right + self.legend.boundingRect().width()) + \
            metrics.horizontalAdvance("000") + 12
        down = self.overhead[1] or int(top + bottom) + 2 * metrics.height() + 8
        return MIN_VIEW_PX + across, MIN_VIEW_PX + down

    def _on_view_resized(self, view) -> None:
        """The plot laid out: the px of its widget that are not its view (axes, legend, margins) measured, and the
        parts placed again where its view came out under MIN_VIEW_PX either way (its overhead was guessed)."""
        box = view.sceneBoundingRect()
        if not self.plot_view.isVisible() or box.width() <= 0 or box.height() <= 0:
            return
        across, down = self.plot_view.width() - int(box.width()), self.plot_view.height() - int(box.height())
        # (only a plausible measure is kept: a view not yet laid out at its widget's size measures nonsense)
        self.overhead = (across if 40 <= across <= 400 else self.overhead[0],
                         down if 40 <= down <= 200 else self.overhead[1])
        if min(box.width(), box.height()) < MIN_VIEW_PX:
            self._arrange()

    def _rows_to_font(self) -> None:
        """Every row back to the font's height (row_px), the height the table's fixed height counts on."""
        for row in range(self.table.rowCount()):
            if self.table.rowHeight(row) != self.row_px:
                self.table.setRowHeight(row, self.row_px)

    def _lay_out_table(self) -> None:
        """The table's named rows (layers across) or columns (down); the layers' are the stream's (_fill_lens)."""
        table = self.table
        if self.layers_across:
            table.setColumnCount(0)
            table.setRowCount(len(LABELS))
            table.setVerticalHeaderLabels(LABELS)
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        else:
            table.setRowCount(0)
            table.setColumnCount(len(LABELS))
            table.setHorizontalHeaderLabels(LABELS)
            table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)     # (_share_columns)

    # ----- the stream ----------------------------------------------------------------------------------
    def unavailable(self, trace) -> str | None:
        return decoder_view_unavailable(trace, "The residual stream's logit lens")

    def forget(self) -> None:
        """No stream of another model or run, and none being read."""
        self.position = None
        self._clear_stream()

    def _clear_stream(self) -> None:
        """No stream shown: no plot, whose axis spanned the last stream's layers, and no layer's column (across) or
        row (down) in the table, whose L0…L{n-1} named them: after a switch, another model's (issue 22, M3)."""
        self.stream = self.shown_key = None
        self.texts = []
        self._clear_plot()
        self.table.clearContents()
        if self.layers_across:
            self.table.setColumnCount(0)
        else:
            self.table.setRowCount(0)
        self._arrange()

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        position = selected_position(trace, selection) if trace is not None else None
        if position is None:
            return
        self.position = position
        ids = tuple(int(i) for i in trace.token_ids[: position + 1])
        under = self.experiments_on()
        key = (trace.model.name, ids, under)
        if key != self.shown_key:                  # no other position's stream beside this one while it is read
            self._clear_stream()
            self.set_formula(f"h_l at position {position}: reading the residual stream…")
        if self.asker.ask(key, ResidualStreamJob(ids, position, ASKED, under)):
            self.readout.setText(f"reading the residual stream at position {position}…")
        stopped = key == self.asker.stopped
        if stopped:
            self.set_formula(f"h_l at position {position}: stopped")
        self.show_stopped(f"reading the residual stream at position {position}" if stopped else None)
        self.show_state()                          # working while it is read

    def _on_answer(self, key, stream) -> None:
        ids = key[1]
        self.stream, self.shown_key = stream, key
        self.texts = [self._texts(stream, layer) for layer in range(len(stream.lens_ids))]
        self._draw_norms(stream)
        self._fill_lens(stream)
        token = readable(self.session.display_token(ids[-1])) if ids else ""
        under = key[2] if len(key) > 2 else None
        self.set_formula(f"h_l at position {stream.position} ('{token}'){under_words(under)}: what each layer "
                         "adds, and the logit lens softmax(Norm(h_l) W_U)")
        self.readout.setText(f"position {stream.position}: ||h_L|| = {float(stream.residual_norms[-1]):.2f}")
        self.show_state()                          # the working state ends: the body is shown
        self.layout().activate()                   # (the body's room now, not once the layout is posted)
        self._arrange()

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
        # layers are whole numbers: ticks every 1, 2, 5, 10… layers, never at "1.5" (pyqtgraph's own choice)
        step = next(step for step in (1, 2, 5, 10, 20, 50, 100) if len(layers) <= 10 * step)
        self.plot.getAxis("bottom").setTickSpacing(levels=[(step, 0)])

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

    def _texts(self, stream, layer: int) -> list[str]:
        """One layer's cells as shown: the lens's top K tokens and their p, then the three norms."""
        tokens = [readable(self.session.display_token(int(i))) for i in stream.lens_ids[layer][:K]]
        probs = [f"{float(p):.2f}" for p in stream.lens_probs[layer][:K]]
        norms = [f"{float(getattr(stream, name)[layer]):.0f}" for name, _ in NORMS]
        return [text for pair in zip(tokens, probs) for text in pair] + norms

    def _cells(self, stream, layer: int) -> list[QTableWidgetItem]:
        """One layer's cells (_texts), each with every lens candidate asked in its tooltip."""
        tokens = [readable(self.session.display_token(int(i))) for i in stream.lens_ids[layer]]
        probs = [float(p) for p in stream.lens_probs[layer]]
        tip = f"layer {layer}: " + ",  ".join(f"'{t}' {p:.3f}" for t, p in zip(tokens, probs))
        cells = [QTableWidgetItem(text) for text in self.texts[layer]]
        for cell in cells:
            cell.setToolTip(tip)
            cell.setTextAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)   # (rows may stretch)
        return cells
