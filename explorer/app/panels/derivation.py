"""Show the work: click a cell A[i, j] of the selected head's map and see it derived from the recorded
tensors, q_i and k_j before and after RoPE, their products per dimension, the scale, softcap and
mask, the row's max, exp and Z_i, then y_i = sum_j A_ij v_j, each figure recomputed
(explorer.core.derivation) with its max |delta| against what the model recorded. For a head whose
output an experiment replaced (an ablation, "only these heads", a patch) it says so, and shows
A.V as what the head would have given beside the output the model went on with.

Stop (Esc) cancels what it was computing, the head's weights and block walk on the model thread and a long
trace's cell off the GUI thread: the panel says what was stopped, with Compute, and computes it again only
when the person presses it or picks another cell, head or run (base.Panel.stop_work).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QTextBrowser

from explorer.app.panels.base import Panel
from explorer.app.panels.derivable import cannot_derive
from explorer.app.panels.derivation_text import derivation_html
from explorer.app.state.session import Selection
from explorer.app.thread.requests import BlockWalkJob, OutputWeightsJob
from explorer.app.widgets.adaptive import kept_shares, readable_px, square_placement
from explorer.app.widgets.asking import Asker
from explorer.app.widgets.block_text import block_html
from explorer.app.widgets.grid_filler import Background
from explorer.app.widgets.plot_text import SMALL_TITLE, fitting_title
from explorer.app.widgets.text_helpers import selected_position
from explorer.core import derivation
from explorer.core.intervention import SOFTMAX, active
from explorer.drawing.heatmap import Heatmap
from explorer.views.cell_derivation import CellAsked, DerivedCell, derive
from explorer.views.long_maps import is_long
from explorer.views.maps import short_label

PAIR_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
UNROTATED = "#9a9a9a"


PARTS = (6, 5)               # the plots' share of the panel beside (or above) the text's, where the bars take more
VIEW_PX = 120                # the least a plot's view may have each way, else the plot is given up
READABLE_CHARS = 30          # the derivation's text keeps this many average characters a line, the map given up
                             # size first: at 1920 x 1080 a 90 px least left it one word a line beside a 740 px map
TEXT_LEAST_PX = 90           # the least the text keeps where the room has no map beside a readable text
NO_BARS = "no room for the q·k bars here: enlarge the panel to see them"
UNBOUNDED_PX = 16777215      # Qt's QWIDGETSIZE_MAX: a widget's size without a maximum
MARGIN_PX = 6                # what a measured plot's axes may grow by, laid out again
AXES_PX = {"map": (120, 130), "bars": (60, 95)}   # a plot's axes, title and margins (width, height), until measured
BARS_KEEP = 0.5              # the q·k bars are shown where the map keeps this share of its side alone, judged with
                             # AXES_PX: at 614 x 471 (1366 x 768, Learn beside) the bars left the map 161 of 333 px


class DerivationPanel(Panel):
    title = "Show the work"
    object_name = "derivation"
    stop_holds = True

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("derive"))
        self.what_box = QComboBox()
        self.what_box.addItems(["the cell A[i, j]", "the block at row i"])
        self.what_box.currentIndexChanged.connect(lambda _: self.refresh())
        controls.addWidget(self.what_box)
        controls.addStretch(1)
        self.body.addLayout(controls)
        # The two plots share one part and the text has the other: three parts in a row (or a column) left the
        # map under 120 px in a dock as square as Learn leaves it at 1366 x 768.
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.plots = QSplitter(Qt.Orientation.Vertical)
        self.view = pg.GraphicsLayoutWidget()
        self.products_view = pg.GraphicsLayoutWidget()
        # Made a turn each after a first raise (Panel.make_plots): 20-40 ms each of pyqtgraph's building, which the
        # raise's own turn could not also hold at 8,000 tokens (it froze the window 76-161 ms).
        self.map: Heatmap | None = None
        self.products: pg.PlotItem | None = None
        self.text = QTextBrowser()
        for widget in (self.view, self.products_view):
            self.plots.addWidget(widget)
        for widget in (self.plots, self.text):
            self.splitter.addWidget(widget)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([660, 560])
        self.splitter.installEventFilter(self)       # the plots arranged for the room the splitter has
        # The shares a person dragged each splitter to, with its orientation then: kept at later resizes while it
        # lies that way. splitterMoved comes of a drag only, never of _arrange's own setSizes.
        self.hand: dict[str, tuple[Qt.Orientation, tuple[float, ...]]] = {}
        self.splitter.splitterMoved.connect(lambda _position, _index: self._on_dragged("outer", self.splitter))
        self.plots.splitterMoved.connect(lambda _position, _index: self._on_dragged("inner", self.plots))
        self.axes_px = dict(AXES_PX)                 # measured once drawn (_measure_axes)
        self._measured = False                       # the map's axes measured since its labels last changed
        self.body.addWidget(self.splitter, 1)
        self.executor = None                # None: the session's model thread (tests give their own)
        self.asker = Asker(self, self._on_weights, lambda message: None)   # without weights the walk stops at y_i
        self.weights: dict[tuple, tuple] = {}               # (model, layer, head) -> (W^O_h, W_h^UK or None)
        self.block_asker = Asker(self, self._on_block, self.error_line.show_error)
        self.walk = None                                    # the last block walk the model thread gave
        self.walk_key = None
        self.cell: tuple[int, int] | None = None            # the cell derived
        self.derived: derivation.CellDerivation | None = None
        self._drawn = None
        self.offset = (0, 0)                                # the trace's (row, column) of the map's cell (0, 0)
        self._map_note = "click any cell of the map to derive it"
        self.bars_given_up = False                          # the room has no q·k bars (_arrange): the readout says so
        self.job = Background(self)                         # a long trace's cell, derived off the GUI thread
        self.job.done.connect(self._on_derived)
        self._asked = None
        self._stopped_cell = None                           # the key of the long trace's cell a Stop cut off
        self._cut: dict[str, str | None] = {"cell": None, "weights": None, "block": None}   # what each Stop cut
        self.set_formula(f"{derivation.kernel_formula(SOFTMAX)},  S_{{ij}} = ⟨q_i, k_j⟩ · scale")

    def unavailable(self, trace) -> str | None:
        return cannot_derive(trace)

    # ----- the two plots, made once ------------------------------------------------------------
    def redraw(self) -> None:
        self.make_plots()

    def plots_built(self) -> bool:
        return self.products is not None

    def build_plots(self) -> Iterator[None]:
        """The map, then the q·k bars."""
        if self.map is None:
            self.map = Heatmap(self.view.ci, row=0, col=0, colorbar=False, axes=("left", "top"))
            self.map.on_click = self._clicked
            self.map.plot.getViewBox().setAspectLocked(True)     # square cells, whatever room the view is given
            yield
        if self.products is None:
            self.products = self.products_view.addPlot()
            fitting_title(self.products)
            self.products.setLabel("bottom", "dimension d")
            self.products.setTitle("q_id k_jd (RoPE pairs share a colour)", size=SMALL_TITLE)

    def forget(self) -> None:
        """Nothing of another model or run: its map, its q·k bars, its cell, its weights and block walk."""
        self.weights, self.walk, self.walk_key = {}, None, None
        self.cell = self.derived = self._drawn = self._asked = None
        self._cut = dict.fromkeys(self._cut)
        self.offset = (0, 0)
        if self.products is not None:
            self.map.clear()
            self.products.clear()
        self.text.clear()

    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        upto = trace.n_steps - 1 if selection.step is None else selection.step
        clicked = (selection.token, selection.key) if selection.attention == "self" else None
        w_o, w_uk = self._weights_of(trace, selection.layer, selection.head)
        asked = CellAsked(trace, selection.layer, selection.head, upto, selected_position(trace, selection), clicked,
                          w_o, w_uk, active(self.session.experiments))
        if not is_long(trace, upto):
            if self.products is None:
                return                               # shown once the plots are built (Panel.make_plots)
            self.job.drop_work()                     # a long trace's cell still being derived is not drawn
            self._say_stopped("cell", None)
            self._show_cell(derive(asked))
            return
        # A long trace's cell reads T keys and a window of rows (a few hundred ms at 8,000 tokens): it is derived
        # off the GUI thread, the cell shown before kept under a working line meanwhile
        if self.job.running and self._asked == asked.key:
            return
        stopped = asked.key == self._stopped_cell
        self._say_stopped("cell", f"deriving the cell of row {asked.position}, layer {asked.layer}, head "
                                  f"{asked.head}" if stopped else None)
        if stopped:
            return
        self._stopped_cell = None                    # another cell asked: the one stopped is derived once asked
        self._asked = asked.key
        self.readout.setText(f"deriving a cell of row {asked.position}, layer {asked.layer}, head {asked.head}…")
        self.job.run(lambda _cancelled: derive(asked), name="show-the-work")

    def _on_derived(self, generation: int, result) -> None:
        if generation != self.job.generation:
            return                                   # another cell, trace or model was asked since
        self._asked = None
        if isinstance(result, Exception):
            self.error_line.show_error(f"Show the work could not derive the cell: {result}")
            return
        if result.asked.trace is self.trace:
            self._show_cell(result)

    def _show_cell(self, cell: DerivedCell) -> None:
        """Draw a derived cell: the map around it, its q·k bars, its walk (or its block's) and the formula."""
        asked, trace, derived = cell.asked, cell.asked.trace, cell.derived
        self.plots_now()
        self._draw_map(cell)
        self.cell, self.derived = (cell.row, cell.column), derived
        self._draw_products(derived)
        if self.what_box.currentIndex() == 1:
            self._ask_block(trace, asked.layer, cell.row)
        else:
            self._say_stopped("block", None)
            self.text.setHtml(derivation_html(derived, trace.token_text))
        self.set_formula(f"A[{cell.row}, {cell.column}] of layer {asked.layer}, head {asked.head} = "
                         f"{derived.weight:.6g} ({derivation.kernel_formula(derived.kernel)}), "
                         f"recomputed (max |Δ| {derived.max_delta:.1e})"
                         + ("; its output replaced by the experiment" if derived.replaced_by else ""))
        self._map_note = cell.note
        self._say_note()
        QTimer.singleShot(0, self, self._measure_axes)      # once the new labels are laid out

    def _draw_map(self, cell: DerivedCell) -> None:
        """The head's map as derived (a long trace's: the window around the cell), the cell highlighted."""
        asked, trace, matrix, top, left = cell.asked, cell.asked.trace, cell.matrix, cell.top, cell.left
        key = (id(trace), asked.layer, asked.head, asked.upto, top, left)
        if key != self._drawn:
            self._drawn, self.offset, self._measured = key, (top, left), False
            rows = [short_label(text) for text in trace.token_text[top: top + matrix.shape[0]]]
            cols = [short_label(text) for text in trace.token_text[left: left + matrix.shape[1]]]
            if cell.windowed:                                                    # a window: say where it is
                rows = [f"{top + i} {label}" for i, label in enumerate(rows)]
                cols = [f"{left + j} {label}" for j, label in enumerate(cols)]
            low, high = min(0.0, float(np.nanmin(matrix))), float(np.nanmax(matrix))
            levels = (low, high if cell.windowed else max(1.0, high))   # linear: A < 0, > 1; a window: its own range
            self.map.set_matrix(matrix, levels, row_labels=rows, col_labels=cols)
        self.map.highlight(cell.row - top, cell.column - left)

    def _weights_of(self, trace, layer: int, head: int) -> tuple:
        """The head's W^O_h (and MLA's W_h^UK) if the model thread gave them, else ask for them."""
        key = (trace.model.name, layer, head)
        stopped = key == self.asker.stopped
        self._say_stopped("weights", f"reading W^O of layer {layer}, head {head}" if stopped else None)
        if key in self.weights:
            return self.weights[key]

        self.asker.ask(key, OutputWeightsJob(layer, head))
        return None, None

    def _ask_block(self, trace, layer: int, row: int) -> None:
        """The block walk of `row` through `layer`, from the model thread (its FFN weights are there)."""
        ids = tuple(int(i) for i in trace.token_ids[: row + 1])
        key = (trace.model.name, ids, layer)
        stopped = key == self.block_asker.stopped
        self._say_stopped("block", f"walking position {row} through block {layer}" if stopped else None)
        if self.walk is not None and self.walk_key == key:
            self.text.setHtml(block_html(self.walk, trace.token_text))
            return

        if self.block_asker.ask(key, BlockWalkJob(ids, layer, row)):
            self.text.setPlainText(f"walking position {row} through block {layer}…")
        elif stopped:
            self.text.setPlainText(f"Stopped before walking position {row} through block {layer}.")

    def _say_stopped(self, part: str, what: str | None) -> None:
        """Say which of its computations (`part`: the cell, the weights, the block walk) a Stop cut off."""
        self._cut[part] = what
        self.show_stopped("; ".join(what for what in self._cut.values() if what) or None)

    def stop_work(self) -> None:
        """A long trace's cell being derived is stopped too, and not derived again until asked again."""
        if self.job.running:
            self._stopped_cell = self._asked
        super().stop_work()

    def resume_work(self) -> None:
        self._stopped_cell = None
        self._cut = dict.fromkeys(self._cut)
        super().resume_work()

    def _on_block(self, key, walk) -> None:
        self.walk, self.walk_key = walk, key
        if self.what_box.currentIndex() == 1 and self.trace is not None:
            self.text.setHtml(block_html(walk, self.trace.token_text))

    def _on_weights(self, key, weights) -> None:
        self.weights = {key: weights}                      # one head's at a time: they are the model's size / L
        if self.trace is not None and key == (self.trace.model.name, self.session.selection.layer,
                                              self.session.selection.head):
            self.show_selection(self.session.selection)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.splitter and event.type() == QEvent.Type.Resize:
            self._arrange(event.size().width(), event.size().height())
        return super().eventFilter(watched, event)

    def _arrange(self, width: int, height: int) -> None:
        """The map the largest square view the splitter's room gives it (adaptive.square_placement), the q·k bars
        beside or under it where the map keeps BARS_KEEP of its side alone (judged with _judging_axes, so that a few
        px of a model's key labels do not show the bars for one model and hide them for the next; where hidden, the
        readout says so), the text the rest (READABLE_CHARS of its font where the room also has the map's least, else
        TEXT_LEAST_PX); the map given up where it has no VIEW_PX. A function of the room alone, but for the shares a
        person dragged a splitter to (_kept): shrunk to the window's least and grown back, the map at 1366 x 768 kept
        118 px of its 360 under the bars, and at 1920 x 1080 it was a 260 x 900 px column of oblong cells."""
        room, handles = (width, height), (self.splitter.handleWidth(), self.plots.handleWidth())
        placed = square_placement(room, handles, (self.axes_px["map"], self.axes_px["bars"]), VIEW_PX + MARGIN_PX,
                                  TEXT_LEAST_PX, PARTS[0] / sum(PARTS), readable_px(self.text, READABLE_CHARS),
                                  BARS_KEEP, self._judging_axes())
        self.plots.setVisible(placed is not None)
        self._give_up_bars(placed is None or placed.inner == "alone")
        if placed is None:
            return
        beside = placed.outer == "beside"
        orientation = Qt.Orientation.Horizontal if beside else Qt.Orientation.Vertical
        self.splitter.setOrientation(orientation)
        along = (width if beside else height) - handles[0]
        plots_least = self._least_px("map", beside) + (
            handles[1] + self._least_px("bars", beside) if placed.inner == placed.outer else 0)
        part = self._kept("outer", orientation, along, placed.part, (plots_least, placed.text))
        self.splitter.setSizes([part, max(0, along - part)])
        self._fit_map_across(placed.inner == "alone", beside, part, height if beside else width)
        if placed.inner != "alone":
            inner_beside = placed.inner == "beside"
            inner = Qt.Orientation.Horizontal if inner_beside else Qt.Orientation.Vertical
            self.plots.setOrientation(inner)
            length = ((part if beside else width) if inner_beside else (height if beside else part)) - handles[1]
            floors = (self._least_px("map", inner_beside), self._least_px("bars", inner_beside))
            first = max(floors[0], min(placed.first, length - floors[1]))      # the bars' room where a drag took it
            first = self._kept("inner", inner, length, first, floors)
            self.plots.setSizes([first, max(0, length - first)])
        if not self._measured and self.map is not None and self.view.isVisible():
            QTimer.singleShot(0, self, self._measure_axes)       # drawn while given up: its axes as laid out now

    def _judging_axes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The axes the bars' presence is judged with: AXES_PX, or a plot's measured axes where they outgrow it. A
        model's labels then move the plots' sizes but not whether the bars are shown: judged with the measured axes,
        SmolLM2's map (a 102 px top axis) lost its bars where Gemma 3's (76 px) kept them at 1366 x 768."""
        return tuple(tuple(max(nominal, measured) for nominal, measured in zip(AXES_PX[name], self.axes_px[name]))
                     for name in ("map", "bars"))

    def _fit_map_across(self, alone: bool, beside: bool, part: int, across: int) -> None:
        """The map alone, held back along the outer way, as long across as its square and axes rather than the
        whole part: a 333 px map sat mid-way in an axis 36 px taller (1366 x 768, Learn beside)."""
        axes_along, axes_across = self.axes_px["map"] if beside else self.axes_px["map"][::-1]
        fitted = min(across, part - axes_along + axes_across) if alone else UNBOUNDED_PX
        if beside:
            self.view.setMaximumSize(UNBOUNDED_PX, fitted)
        else:
            self.view.setMaximumSize(fitted, UNBOUNDED_PX)

    def _give_up_bars(self, given_up: bool) -> None:
        """Hide the q·k bars where the room has no VIEW_PX for them beside the map and a readable text, saying so."""
        self.products_view.setVisible(not given_up)
        if given_up != self.bars_given_up:
            self.bars_given_up = given_up
            self._say_note()

    def _say_note(self) -> None:
        """The derived cell's note, and where the room has no q·k bars, that they were given up and why."""
        if self.cell is not None:
            self.readout.setText(self._map_note + (f"; {NO_BARS}" if self.bars_given_up else ""))

    def _least_px(self, plot: str, across: bool) -> int:
        """The least px of `plot` ("map" or "bars") across (else down): its axes and a view of VIEW_PX."""
        return self.axes_px[plot][0 if across else 1] + VIEW_PX + MARGIN_PX

    def _kept(self, splitter: str, orientation: Qt.Orientation, room: int, placed: int, least: tuple[int, int]) -> int:
        """The first part of `splitter` ("outer" or "inner") in `room` px: `placed`, or where a person dragged it
        lying this way, the share they left (adaptive.kept_shares), each part raised to its `least`."""
        hand = self.hand.get(splitter)
        if hand is None or hand[0] != orientation:
            return placed
        return kept_shares(room, hand[1], least)[0]

    def _on_dragged(self, name: str, splitter: QSplitter) -> None:
        """A person's drag of a splitter's handle: the shares it left are kept at every later resize."""
        sizes = splitter.sizes()
        if len(sizes) == 2 and min(sizes) >= 0 and sum(sizes) > 0:
            self.hand[name] = (splitter.orientation(), (sizes[0] / sum(sizes), sizes[1] / sum(sizes)))

    def _measure_axes(self) -> None:
        """Each plot's axes, title and margins as drawn (its widget less its view), for _arrange; arranged again
        for them (the map's key labels of another prompt)."""
        measured = dict(self.axes_px)
        for name, widget, plot in (("map", self.view, self.map.plot if self.map is not None else None),
                                   ("bars", self.products_view, self.products)):
            if plot is None or not widget.isVisible():
                continue
            self._measured = self._measured or name == "map"
            if widget.width() < 2 * VIEW_PX:
                continue
            box = plot.getViewBox().size()
            measured[name] = (max(0, widget.width() - int(box.width())), max(0, widget.height() - int(box.height())))
        self.axes_px = measured
        self._arrange(self.splitter.width(), self.splitter.height())

    def _clicked(self, row: int, column: int) -> None:
        row, column = row + self.offset[0], column + self.offset[1]            # the map's cell -> the trace's
        self.select(token=row, key=column)

    def _draw_products(self, cell: derivation.CellDerivation) -> None:
        self.products.clear()
        dims = np.arange(cell.products.shape[0])
        brushes = [pg.mkBrush(UNROTATED)] * dims.size
        if cell.q_rotation is not None:
            for pair, (a, b) in enumerate(cell.q_rotation.pairs):
                colour = pg.mkBrush(PAIR_COLOURS[pair % len(PAIR_COLOURS)])
                brushes[a] = brushes[b] = colour
        self.products.addItem(pg.BarGraphItem(x=dims, height=cell.products, width=0.8, brushes=brushes, pen=None))
        self.products.setXRange(-0.5, dims.size - 0.5, padding=0)
