"""The KV lab's Cache per variant tab, left side: where the cache shape comes from (a config.json or GGUF
header, a bundled config of a model too big to load, or the loaded model), what it is counted for (dtype,
tokens, MLA ranks), and the table of variants, kept readable in a short dock: its rows as tall as their
text, the table given the height of all its rows before the plots below it take the rest, and, where even
that leaves rows out of sight, a hint that names how many more there are to scroll to.

At 1366×768 the lab sits in a bottom dock a few hundred pixels high; with the table above its plots
(kv_plot.FitSplitter) the two shared that height 2 : 3 and the table showed two of SmolLM2's six rows.
The plots keep their minimum height (three legible plots), so the window never grows for the table.
The widgets only say what was asked (`config_chosen`, their own signals); the panel decides what follows.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFrame,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.app.figures import export_dialogs
from explorer.app.widgets.flow_layout import FlowLayout
from explorer.app.widgets.kv_plot import DTYPES, BytesPlot, FitSplitter
from explorer.app.widgets.what_if_view import table_item
from explorer.app.window.error_bar import ElidedLine
from explorer.core.store import model_folders, resources_dir
from explorer.core.units import human_bytes

COLUMNS = ("variant", "K/V heads", "numbers/token/layer", "bytes/token", "bytes total", "vs MHA")
BUNDLED = "bundled config…"
SIDE_BY_SIDE_PX = 1150      # the table (450 px) and three plots of 230 px
RESIZES = (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.LayoutRequest)


def hidden_rows(table: QTableWidget) -> list[int]:
    """The rows of `table` not wholly inside its viewport (each must be scrolled to, to be read)."""
    bottom = table.viewport().height()
    return [row for row in range(table.rowCount())
            if table.visualRect(table.model().index(row, 0)).bottom() >= bottom
            or table.visualRect(table.model().index(row, 0)).top() < 0]


class VariantRows(QObject):
    """Keeps the table's rows in sight in `splitter` (table section first, plots second), and `hint` saying
    how many are not."""

    def __init__(self, splitter: QSplitter, table: QTableWidget, hint: QLabel) -> None:
        super().__init__(table)
        self.splitter, self.table, self.hint = splitter, table, hint
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)   # follows the font
        hint.setVisible(False)
        for watched in (splitter, table.viewport()):
            watched.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() in RESIZES:
            QTimer.singleShot(0, self, self.fit)          # once Qt has laid the rows and the splitter out
        return super().eventFilter(watched, event)

    def fit(self) -> None:
        """Give the table what its rows lack, down to the plots' minimum height, and say what still is."""
        splitter, table = self.splitter, self.table
        if splitter.orientation() == Qt.Orientation.Vertical and splitter.count() == 2:
            sizes = splitter.sizes()
            lacking = table.verticalHeader().length() - table.viewport().height()
            room = sizes[0] + sizes[1] - splitter.widget(1).minimumSizeHint().height()
            room = max(room, sizes[0])
            wanted = min(sizes[0] + max(lacking, 0), room)
            if wanted != sizes[0] and lacking > 0:
                splitter.setSizes([wanted, sizes[0] + sizes[1] - wanted])
        self.say_hidden()

    def say_hidden(self) -> None:
        hidden = hidden_rows(self.table)
        names = ", ".join(self.table.item(row, 0).text() for row in hidden if self.table.item(row, 0))
        self.hint.setText(f"↓ {len(hidden)} more: scroll the table" if hidden else "")
        self.hint.setToolTip(f"Out of sight: {names}" if hidden else "")
        self.hint.setVisible(bool(hidden))


def bundled_configs() -> dict[str, Path]:
    """The config-only folders shipped in resources/configs (Llama 3 70B, Gemma 3 27B, DeepSeek-V2)."""
    return {p.name: p for p in model_folders(resources_dir() / "configs")}


class VariantTable(QWidget):
    """The controls, wrapped to the width, over the table of variants. `config_chosen` carries the path of a config the
    user picked (a file, or a bundled one); the other controls' own signals say the rest."""

    config_chosen = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.source_label = ElidedLine()           # a long model name elided, not widening the tab
        self.source_label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.source_label.setText("no model")
        self.open_button = QPushButton("Open config…")
        self.open_button.setToolTip("compare the caches of a model from its config.json alone, without weights")
        self.open_button.clicked.connect(self._ask_config)
        self.bundled_box = QComboBox()
        self.bundled_box.addItems([BUNDLED, *bundled_configs()])
        self.bundled_box.setToolTip("models too big to load: Llama 3 70B, Gemma 3 27B, DeepSeek-V2")
        self.bundled_box.activated.connect(self._on_bundled_chosen)
        self.model_button = QPushButton("Loaded model")
        self.dtype_box = QComboBox()
        self.dtype_box.addItems(DTYPES)
        self.tokens_box = QSpinBox()
        self.tokens_box.setRange(0, 2 ** 31 - 1)
        self.tokens_box.setPrefix("tokens ")
        self.ranks_edit = QLineEdit()
        self.ranks_edit.setPlaceholderText("MLA ranks (default 2, 4, 8 × d_h)")
        self.compare_button = QPushButton("Compare MHA/MQA/GQA/MLA…")
        self.compare_button.setToolTip("open the four natively trained Shakespeare models and step one prompt in all")
        self.rows_hint = QLabel()                  # on the controls' line: it takes no row of the table's
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        placeholder = self.ranks_edit.placeholderText()
        self.ranks_edit.setMinimumWidth(self.ranks_edit.fontMetrics().horizontalAdvance(placeholder) + 16)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        # The controls wrap like words to the tab's width: in two fixed lines the first asked for 613 px, and
        # beside Learn at 1366 px the tab had 610, so it scrolled sideways, the third plot and the hint cut off.
        controls = FlowLayout()
        for widget in (self.source_label, self.open_button, self.bundled_box, self.model_button, self.compare_button,
                       self.dtype_box, self.tokens_box, self.ranks_edit, self.rows_hint):
            controls.addWidget(widget)
        layout.addLayout(controls)
        layout.addWidget(self.table, 1)

    def ranks(self) -> list[int] | None:
        """The MLA ranks typed in (any positive whole numbers in the text), or None for the defaults."""
        found = [int(r) for r in re.findall(r"\d+", self.ranks_edit.text())]
        return [r for r in found if r > 0] or None

    def fill(self, rows) -> None:
        """One line per kv_variants.VariantRow, the model's own variant in bold."""
        self.table.setRowCount(len(rows))
        for index, row in enumerate(rows):
            native = row.variant.native
            heads = "—" if row.variant.kv_heads is None else row.variant.kv_heads
            cells = (row.variant.name + (" ★ native" if native else ""), heads, row.variant.elements_per_layer,
                     human_bytes(row.bytes_per_token), human_bytes(row.bytes_total), f"{row.ratio_to_mha:.4f}")
            for column, value in enumerate(cells):
                self.table.setItem(index, column, table_item(value, bold=native))
        self.table.resizeColumnsToContents()

    def _on_bundled_chosen(self, index: int) -> None:
        folder = bundled_configs().get(self.bundled_box.itemText(index))
        if folder is not None:
            self.config_chosen.emit(str(folder))
        self.bundled_box.setCurrentIndex(0)           # the box names no model of its own: it is a menu

    def _ask_config(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a config.json or .gguf", export_dialogs.last_folder(),
                                              "Model config (config.json *.json *.gguf)")
        if path:
            self.config_chosen.emit(path)


class VariantsTab(QScrollArea):
    """The Cache per variant tab: the controls and table (`controls`) beside or above the bytes plots (`plot`),
    the table's rows kept in sight (`rows`). It fills a scroll area: in a dock shorter than the table and the
    plots' minimum it scrolls, rather than holding the window (every dock tabbed with this one) at that
    height; 541 px asked a 1366 x 768 screen for a 761 px window."""

    plot_built = Signal(object)              # the BytesPlot, once built (plot)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.controls = VariantTable()
        self._plot: BytesPlot | None = None
        self._asked: tuple | None = None         # (shape, ranks, name): the curves to draw once the plot is built
        self.splitter = splitter = FitSplitter(SIDE_BY_SIDE_PX)    # the table beside the plots where both fit
        splitter.addWidget(self.controls)
        splitter.addWidget(QWidget())            # the plots' place until they are built
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        self.rows = VariantRows(splitter, self.controls.table, self.controls.rows_hint)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidget(splitter)
        self._building: Iterator | None = self._build_parts()       # the plots' parts still to build
        self._build = QTimer(self)               # a timer, not a queued call: the window's own timers go first
        self._build.setSingleShot(True)
        self._build.timeout.connect(self._next_build_part)
        self._build.start(0)

    @property
    def plot(self) -> BytesPlot:
        """The bytes plots, built a part a turn from the turn after the panel's first drawing, or at once when
        first asked for: built with the panel, they lengthened the KV lab's first raise by ~55 ms, and built
        whole in the turn after it, with the panel's first drawing and their paint, held the window ~150 ms."""
        if self._plot is None:
            self._build.stop()
            building, self._building = self._building, None
            for _ in building or ():
                pass
        return self._plot

    def _next_build_part(self) -> None:
        if self._building is None:
            return
        try:
            next(self._building)
        except StopIteration:
            self._building = None
            return
        self._build.start(0)

    def _build_parts(self) -> Iterator[None]:
        """Build the plots, yielding between parts of ~15 ms of GUI work each: out of sight until whole, as a
        figure built at once is (shown while its plots were added, their columns came out a few pixels apart),
        and painted once, not once a plot."""
        # The turn after the panel's build runs this timer and the dock's first drawing together (this one, started
        # first, fires first): the figure waits out that turn and the next, or the event loop ran the first
        # drawing, the panel's paint and the empty figure in one go (PanelDock._first_drawing).
        yield
        yield
        plot = BytesPlot(titled=False, plots=False)
        yield
        yield from plot.add_plots()
        yield
        self.splitter.replaceWidget(1, plot).deleteLater()
        self.splitter.setStretchFactor(1, 3)
        self._plot = plot
        self.plot_built.emit(plot)
        if self._asked is not None:
            plot.draw_later(*self._asked)          # its curves, one dtype a turn from the next

    def show_rows(self, rows, shape, name: str, replot: bool = True) -> None:
        """The variants of `shape` (kv_variants.CacheShape, or None) in the table and, with `replot`, the plots."""
        self.controls.fill(rows)
        self.rows.say_hidden()
        if not replot:
            return
        self._asked = None if shape is None or not rows else (shape, self.controls.ranks(), name)
        if self._plot is None:
            return                               # drawn as the plot is built
        if self._asked is None:
            self._plot.clear_curves()
        else:
            self._plot.draw_later(*self._asked)
