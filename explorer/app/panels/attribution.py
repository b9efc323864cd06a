"""Why this token: direct logit attribution of one next-token logit at the selected position.

    z_N = u . h_0 + sum_{l,h} u . O_h W^O_h + sum_l u . f_l + rest,   u = centre(g * W_U[N])

(explorer.core.attribution: the final norm's scale g frozen at this position, so the parts sum
exactly). Left, the largest parts as bars; right, every head as a layer x head map with the FFN
sublayers as its last column. Clicking a head selects it, which opens it in the attention views.

Stop (Esc) cancels an attribution being computed: the panel then says it was stopped, with a Compute button,
and asks nothing until the person presses it or picks another position, token, run or model. An attribution
already drawn stays, since it still holds for the trace that stays. Dropped (another model or run), an attribution
leaves nothing: no part's name, axis values, colour bar range or selected head's outline stands under
"attributing…".
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from explorer.app.panels.base import Panel, decoder_view_unavailable, under_words
from explorer.app.state.session import Selection
from explorer.app.thread.requests import AttributionJob
from explorer.app.widgets.adaptive import around_view, is_wide, orient
from explorer.app.widgets.asking import Asker
from explorer.app.widgets.plot_text import SMALL_TITLE
from explorer.app.widgets.text_helpers import readable, selected_position
from explorer.app.widgets.text_widgets import Caption
from explorer.drawing.colours import sign_colours
from explorer.drawing.heatmap import Heatmap, symmetric_levels

N_BARS = 12
POSITIVE, NEGATIVE = sign_colours()           # the heads' map's hues: one colour convention in the panel


# Stacked (a tall dock), the token box and its caption take the lines they need, the two plots the rest:
# equal shares at 1366x768 beside Learn left the plots 46 px tall under an empty caption column.
SIDE_LINES = 6              # the token box's row and up to four lines of caption
# Side by side, the caption takes half the width and the plots 3 : 4 of the rest: below this width the heads'
# map was 42-109 px wide (690 x 545 px beside Learn at 1366x768, after the translator, on the bundled MLA model)
SIDE_BY_SIDE_PX = 900
SIDE_PX = 280               # the caption's column side by side, the plots the rest (also after a stacked spell)
# The plots lie in a row or a column by their view's own shape, each view kept VIEW_PX each way, or the bars are
# given up for the heads' map: a row or a column by the splitter's orientation left both plots 41-43 px tall in
# the 567 x 223 px view under the words at the window's least size on a 1366x768 screen.
VIEW_PX = 120
AXES_PX = {"bars": (90, 60), "heads": (70, 60)}    # axes, title, colour bar (width, height), until measured
SHARES = {"bars": 3, "heads": 4}                    # the plots' shares of a row


def plots_placement(width: int, height: int, axes_px: dict) -> tuple[bool, bool]:
    """(in a row, both plots) for a view of width x height: both where a row or a column leaves each view VIEW_PX
    each way (the view's own shape's first), else the heads' map alone, in a row."""
    def legible(wide: bool, names: tuple[str, ...]) -> bool:
        total = sum(SHARES[name] for name in names)
        rooms = {name: (width * SHARES[name] // total, height) if wide else (width, height // len(names))
                 for name in names}
        return all(rooms[name][0] - axes_px[name][0] >= VIEW_PX and rooms[name][1] - axes_px[name][1] >= VIEW_PX
                   for name in names)

    for wide in ((True, False) if width >= height else (False, True)):
        if legible(wide, ("bars", "heads")):
            return wide, True
    return True, False


class AttributionPanel(Panel):
    title = "Why this token"
    object_name = "attribution"
    stop_holds = True           # a Stop cancels the attribution until Compute (base.Panel.stop_work)

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.executor = None                # None: the session's model thread (tests give their own)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        side = QWidget()
        column = QVBoxLayout(side)
        column.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("token"))
        self.token_box = QComboBox()
        self.token_box.setMinimumContentsLength(14)
        self.token_box.currentIndexChanged.connect(lambda _: self._on_token_chosen())
        row.addWidget(self.token_box, 1)
        column.addLayout(row)
        self.caption = Caption()                # whole in the side column, however narrow (a scroll area's)
        column.addWidget(self.caption.scrolled(), 1)
        self.view = pg.GraphicsLayoutWidget()
        self.view.installEventFilter(self)          # the plots placed for the view's shape (_place)
        self.axes_px = dict(AXES_PX)
        self._placed: tuple[bool, bool] | None = None        # (in a row, both plots) as last placed
        # Built a turn each at a first raise (Panel.make_plots): each is 20-40 ms of pyqtgraph's making, which the
        # raise's turn at 8,000 tokens could not also hold (its first raise froze the window 120-138 ms).
        self.bars: pg.PlotItem | None = None
        self.heads: Heatmap | None = None
        self.splitter.addWidget(side)
        self.splitter.addWidget(self.view)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([SIDE_PX, 900])
        self.body.addWidget(self.splitter, 1)
        self.asker = Asker(self, self._on_answer, self.error_line.show_error)
        self.result = None
        self.bars_drawn = 0                 # how many bars are drawn
        self.answered = None                # the key of the result drawn
        # An answer come while the plots are built in turns (a first raise): drawn in a turn after theirs. Drawn as
        # it came, it built the plots still to build and drew them in one turn (~80 ms of GUI work at 8,000 tokens).
        self.waiting: tuple | None = None
        self.position: int | None = None
        self._tokens: list[int | None] = [None]
        self.set_formula("z_N = embed + Σ_{l,h} u·O_h W^O_h + Σ_l u·f_l + rest")

    def unavailable(self, trace) -> str | None:
        return decoder_view_unavailable(trace, "Why this token")

    # ----- the two plots, built once --------------------------------------------------
    def redraw(self) -> None:
        self.make_plots()

    def plots_built(self) -> bool:
        return self.heads is not None

    def build_plots(self) -> Iterator[None]:
        """The bars' plot, then the heads' map, then, in a turn of its own, an answer that came meanwhile. Built in
        turns, the view is built out of sight and painted once, after both: each turn painted the half-built
        figure again (six paints of the view in a first raise, ~5 ms of GUI work each). Its first paint has a turn
        of its own: painted right after the heads' map was made, the two held the window in one go (the map ~30 ms
        and the paint of four axes ~30 ms of GUI work at 8,000 tokens, 47-76 ms between two beats)."""
        unpainted = self.drawing and self.view.updatesEnabled()
        if unpainted:
            self.view.setUpdatesEnabled(False)
        try:
            if self.bars is None:
                self._build_bars()
                yield
            if self.heads is None:
                self._build_heads()
                if unpainted:
                    yield                     # painted once updates are on again, after this turn
        finally:                              # (also where the building is dropped, or the panel deleted)
            if unpainted and shiboken6.isValid(self.view):
                self.view.setUpdatesEnabled(True)
        if self.waiting is not None:
            yield
            waiting, self.waiting = self.waiting, None
            if waiting is not None:
                self._draw_answer(*waiting)

    def _build_bars(self) -> None:
        self.bars = self.view.addPlot(row=0, col=0)
        self.bars.invertY(True)
        self.bars.setLabel("bottom", "contribution to the logit")
        self.bars.showGrid(x=True, alpha=0.25)
        self.bars.getViewBox().sigResized.connect(self._on_bars_resized)

    def _on_bars_resized(self, view) -> None:
        """The bars laid out with a view under VIEW_PX (their axes and title measured before the plot had its new
        size, e.g. at a shrink to 760 x 1080, where they left the bars 110 px tall): placed again next turn, with
        the axes now measured."""
        if self.bars.isVisible() and 0 < min(view.width(), view.height()) < VIEW_PX:
            QTimer.singleShot(0, self, self._place)

    def _build_heads(self) -> None:
        self.heads = Heatmap(self.view.ci, row=0, col=1, colormap="CET-D1", axes=("left", "bottom"))
        self.heads.on_click = self._clicked
        self.heads.on_hover = self._hover
        self._place()

    def _place(self) -> None:
        """The plots in a row where the view is wide, in a column where it is tall (the other way where only that
        leaves both views VIEW_PX each way), the heads' map alone where neither does."""
        if self.heads is None:
            return
        self._measure_axes()
        # the plots' room is the view less its layout's margins and spacing: the whole view counted, the bars were
        # placed for 133 px of height and had 109 (at a shrink to 760 x 1080)
        grid = self.view.ci.layout
        left, top, right, bottom = grid.getContentsMargins()
        width = self.view.width() - int(left + right + grid.horizontalSpacing())
        height = self.view.height() - int(top + bottom + grid.verticalSpacing())
        wide, both = plots_placement(width, height, self.axes_px)
        if (wide, both) == self._placed:
            # the same placement in a new size: as many bars as the bars' new height holds (at a resize the
            # plot still had its old height, so grown back from a small dock it kept "the 3 largest parts")
            if both and self.result is not None and self._bars_fit() != self.bars_drawn:
                self._draw_bars(self.result)
            return
        self._placed = wide, both
        shown = [self.bars, self.heads.plot] if both else [self.heads.plot]
        grid = self.view.ci.layout       # moved in Qt's grid only: out of the scene, a plot's view lost its items
        laid = [grid.itemAt(index) for index in range(grid.count())]
        for plot in (self.bars, self.heads.plot):
            if plot in laid:
                grid.removeItem(plot)
        for index, plot in enumerate(shown):
            grid.addItem(plot, 0 if wide else index, index if wide else 0)
        self.bars.setVisible(both)
        shares = [SHARES["bars"], SHARES["heads"]] if both else [1, 0]
        for index in range(2):
            grid.setColumnStretchFactor(index, shares[index] if wide else 1 - index)
            grid.setRowStretchFactor(index, 1 - index if wide else int(bool(shares[index])))
        if self.result is not None and both:
            self._draw_bars(self.result)          # as many bars as their new height holds

    def _measure_axes(self) -> None:
        """Each shown plot's axes, title and colour bar as laid out (its size less its view's)."""
        for name, plot in (("bars", self.bars), ("heads", self.heads.plot)):
            measured = around_view(plot) if plot.isVisible() else None
            if measured is not None:
                self.axes_px[name] = measured

    def eventFilter(self, watched, event) -> bool:
        if watched is self.view and event.type() == QEvent.Type.Resize:
            # after the resize: items moved in the scene's layout while Qt lays the dock out crashed it
            QTimer.singleShot(0, self, self._place)
        return super().eventFilter(watched, event)

    def forget(self) -> None:
        """No attribution of another model or run: its bars, its layer × head map, its caption, its choices."""
        self._clear_result()
        self.position, self._tokens = None, [None]
        with self.updating():
            self.token_box.clear()

    def _clear_result(self) -> None:
        self.result = self.answered = self.waiting = None
        if self.heads is not None:
            self.bars.clear()
            self.bars.getAxis("left").setTicks([[]])          # the parts' names (MLP 3, L3.H4…) of the last answer
            self.bars.setTitle(None)
            _show_values(self.bars, False)                     # its axis spanned the last answer's parts
            self.heads.clear()
            self.heads.tile_box.setVisible(False)              # the last answer's selected head, over empty axes
            bar = self.heads.colorbar
            if bar is not None:               # its range was the last answer's; its place kept (the map keeps its size)
                policy = bar.sizePolicy()
                policy.setRetainSizeWhenHidden(True)
                bar.setSizePolicy(policy)
                bar.setVisible(False)
        self.caption.set_plain("")

    # ----- asking --------------------------------------------------------------------
    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        position = selected_position(trace, selection) if trace is not None else None
        if position is None:
            return
        if position != self.position:
            self.position = position
            self._fill_tokens(trace, position)
        self._ask()
        if self.result is not None:
            self.heads.outline(selection.layer, selection.head, 1, 1)

    def _fill_tokens(self, trace, position: int) -> None:
        """The choices: the top prediction, the token that came next, and the recorded candidates."""
        found = trace.candidates(position)
        ids = [] if found is None else [int(i) for i in found[0]]
        if position + 1 < trace.n_tokens:
            ids = [int(trace.token_ids[position + 1])] + ids
        ids = list(dict.fromkeys(ids))
        self._tokens = [None] + ids
        with self.updating():
            self.token_box.clear()
            self.token_box.addItem("top prediction")
            for token_id in ids:
                self.token_box.addItem(f"'{readable(self.session.display_token(token_id))}'  #{token_id}")

    def _on_token_chosen(self) -> None:
        if not self._updating:
            self._ask()

    def _ask(self) -> None:
        trace, position = self.trace, self.position
        if trace is None or position is None:
            return
        index = max(0, self.token_box.currentIndex())
        token = self._tokens[index] if index < len(self._tokens) else None
        ids = tuple(int(i) for i in trace.token_ids[: position + 1])

        under = self.experiments_on()
        key = (trace.model.name, ids, position, token, under)
        if self.asker.ask(key, AttributionJob(ids, position, token, under)):
            self.readout.setText(f"attributing the logit after position {position}…")
        stopped = key == self.asker.stopped
        if stopped and key != self.answered:        # no bars or map of another key beside the words
            self._clear_result()
        self.show_stopped(f"the attribution of the logit after position {position}" if stopped else None)

    # ----- drawing -------------------------------------------------------------------
    def _on_answer(self, key, result) -> None:
        if not self.plots_built() and self.drawing:      # the plots are being built a turn each: drawn after them
            self.waiting = (key, result)
            return
        self.waiting = None
        self._draw_answer(key, result)

    def _draw_answer(self, key, result) -> None:
        self.plots_now()
        self.result, self.answered = result, key
        self._draw_bars(result)
        n_layers, n_heads = result.heads.shape
        matrix = np.concatenate([result.heads, result.mlp[:, None]], axis=1)           # (L, N_Q + 1)
        self.heads.set_matrix(matrix, symmetric_levels(result.heads), row_labels=[f"L{l}" for l in range(n_layers)],
                              col_labels=[f"H{h}" for h in range(n_heads)] + ["MLP"])
        if self.heads.colorbar is not None:
            self.heads.colorbar.setVisible(True)
        self.heads.plot.setTitle("every head, and each layer's FFN (colours span the heads' range)", size=SMALL_TITLE)
        selection = self.session.selection
        self.heads.outline(selection.layer, selection.head, 1, 1)
        token = readable(self.session.display_token(result.token_id))
        capped = "" if result.capped_logit is None else \
            f"; the model's softcap makes it {result.capped_logit:.3f} (the pre-cap logit is split)"
        self.caption.set_plain(
            f"z = {result.logit:.3f} for '{token}' (#{result.token_id}) after position {result.position} "
            f"'{readable(self.session.display_token(key[1][-1]))}'{under_words(key[4] if len(key) > 4 else None)}"
            f"{capped}. "
            f"embed {result.embed:+.3f}, heads {result.heads.sum():+.3f}, FFN {result.mlp.sum():+.3f}, "
            f"rest {result.rest:+.3f}: sum {result.total():.3f}. Decomposition: "
            f"{result.decomposition.split(':')[0]}, the norm scales frozen here.")
        self.caption.setToolTip(f"Shown: {result.decomposition}.")
        self.readout.setText("click a head to open it in the attention views")
        QTimer.singleShot(0, self, self._place)      # for the axes of these labels, once laid out

    def _draw_bars(self, result) -> None:
        self.bars.clear()
        _show_values(self.bars, True)
        parts = result.largest(self._bars_fit())
        self.bars_drawn = self._bars_fit()
        values = np.array([value for _, value in parts])
        brushes = [pg.mkBrush(POSITIVE if value >= 0 else NEGATIVE) for value in values]
        self.bars.addItem(pg.BarGraphItem(x0=np.minimum(values, 0), y=np.arange(len(parts)), height=0.7,
                                          width=np.abs(values), brushes=brushes, pen=None))
        self.bars.getAxis("left").setTicks([[(i, name) for i, (name, _) in enumerate(parts)]])
        self.bars.setYRange(-0.5, len(parts) - 0.5, padding=0)
        self.bars.setTitle(f"the {len(parts)} largest parts", size=SMALL_TITLE)

    def _bars_fit(self) -> int:
        """How many bars the bars' plot holds at its height, at least 3, at most N_BARS."""
        return max(3, min(N_BARS, int((self.bars.height() - 50) // 15)))          # bars of >= 15 px each

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        width, height = event.size().width(), event.size().height()
        if orient(self.splitter, width, height, least=SIDE_BY_SIDE_PX):
            if not is_wide(width, height, SIDE_BY_SIDE_PX):
                side = min(SIDE_LINES * self.fontMetrics().lineSpacing(), height // 3)
                self.splitter.setSizes([side, max(1, self.splitter.height() - side)])
            else:           # side by side again: the caption's column as when built wide, not half the panel
                self.splitter.setSizes([SIDE_PX, max(1, self.splitter.width() - SIDE_PX)])
        if self.result is not None and height != event.oldSize().height():
            self._draw_bars(self.result)

    # ----- pointer -------------------------------------------------------------------
    def _clicked(self, layer: int, column: int) -> None:
        if self.result is None:
            return
        if column < self.result.heads.shape[1]:
            self.select(layer=layer, head=column)
        else:
            self.select(layer=layer)

    def _hover(self, layer, column) -> None:
        if self.result is None or layer is None:
            return
        heads = self.result.heads
        name = f"head {column}" if column < heads.shape[1] else "FFN"
        value = heads[layer, column] if column < heads.shape[1] else self.result.mlp[layer]
        self.readout.setText(f"layer {layer}, {name}: {float(value):+.4f} of z = {self.result.logit:.3f}")


def _show_values(plot: pg.PlotItem, shown: bool) -> None:
    """The numbers along the plot's bottom axis, shown or not (a change only where it changes: it lays the axis out)."""
    axis = plot.getAxis("bottom")
    if axis.style["showValues"] != shown:
        axis.setStyle(showValues=shown)
