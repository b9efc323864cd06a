"""The KV lab's Cache per variant tab, left side: where the cache shape comes from (a config.json or GGUF
header, a bundled config of a model too big to load, or the loaded model), what it is counted for (dtype,
tokens, MLA ranks), and the table of variants, kept readable in a short dock: its rows as tall as their
text, the table given the height (or, beside the plots, the width) of all its rows before the plots take the
rest, and, where even that leaves rows out of sight, a hint that names how many more there are to scroll to.
Each row carries its curve's pen: the table is the plots' legend, whose own row below them took ~60 px.

The table goes above the plots where all its rows and three legible plots fit one above the other, beside
them where they fit side by side, and above them, scrolled, where neither does (VariantRows.arrange). At
1920x1080 the lab sits in a bottom dock ~330 px high: above the plots, the table showed one row of six and the
plots' "tokens" axis titles were cut at the bottom. The plots keep their minimum size (three legible plots),
so the window never grows for the table.
The widgets only say what was asked (`config_chosen`, their own signals); the panel decides what follows.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

from PySide6.QtCore import QEvent, QLineF, QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetricsF, QIcon, QPainter, QPen, QPixmap
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
from explorer.app.widgets.adaptive import orient
from explorer.app.widgets.flow_layout import FlowLayout
from explorer.app.widgets.kv_plot import DTYPES, LEAST_WIDTH_PX, MIN_HEIGHT_PX, BytesPlot, variant_pens
from explorer.app.widgets.turns import Turns
from explorer.app.widgets.what_if_view import table_item
from explorer.app.window.error_bar import ElidedLine
from explorer.core.store import model_folders, resources_dir
from explorer.core.units import human_bytes

# Headers in two lines: "numbers/token/layer" in one made its column three times as wide as its numbers, and
# the table too wide to stand beside the plots in a 1920 px window's bottom dock.
COLUMNS = ("variant", "K/V\nheads", "numbers /\ntoken / layer", "bytes /\ntoken", "bytes\ntotal", "vs\nMHA")
BUNDLED = "bundled config…"
RESIZES = (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.LayoutRequest)


def pen_icon(pen: QPen, size: QSize) -> QIcon:
    """A short stroke of `pen` (its colour, width and dashes): the curve's sample in a legend."""
    pixmap = QPixmap(size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(pen)
    middle = size.height() // 2 + 0.5               # a pixel row's centre: a thin stroke is one crisp row
    painter.drawLine(QLineF(2, middle, size.width() - 2, middle))
    painter.end()
    return QIcon(pixmap)


def hidden_rows(table: QTableWidget) -> list[int]:
    """The rows of `table` not wholly inside its viewport (each must be scrolled to, to be read)."""
    bottom = table.viewport().height()
    return [row for row in range(table.rowCount())
            if table.visualRect(table.model().index(row, 0)).bottom() >= bottom
            or table.visualRect(table.model().index(row, 0)).top() < 0]


def plots_least(plots: QWidget) -> QSize:
    """The least size of the splitter's plots: a BytesPlot's own, an estimate for the place kept until it is built."""
    return plots.least_size() if isinstance(plots, BytesPlot) else QSize(LEAST_WIDTH_PX, MIN_HEIGHT_PX)


class VariantRows(QObject):
    """Lays out `splitter` (the controls and table first, the plots second) in the scroll area `area`: the table
    above the plots or beside them (`arrange`), its rows in sight, and `hint` saying how many are not."""

    def __init__(self, area: QScrollArea, splitter: QSplitter, controls: "VariantTable") -> None:
        super().__init__(controls.table)
        self.area, self.splitter, self.controls = area, splitter, controls
        self.table, self.hint = controls.table, controls.rows_hint
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # follows the font
        self.hint.setVisible(False)
        for watched in (area, splitter, self.table.viewport()):
            watched.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() in RESIZES:
            QTimer.singleShot(0, self, self.fit)          # once Qt has laid the rows and the splitter out
        return super().eventFilter(watched, event)

    def fit(self) -> None:
        """Arrange the table and the plots, give the table what its rows lack (or give back what they do not use),
        down to the plots' minimum along the splitter, and say what rows are still out of sight."""
        self.arrange()
        splitter, table = self.splitter, self.table
        if splitter.count() == 2:
            sizes = splitter.sizes()
            least = plots_least(splitter.widget(1))
            if splitter.orientation() == Qt.Orientation.Vertical:
                lacking = table.verticalHeader().length() - table.viewport().height()
                plots = least.height()
            else:
                lacking = table.horizontalHeader().length() - table.viewport().width()
                plots = least.width()
            wanted = sizes[0] + lacking
            if lacking > 0:
                wanted = min(wanted, max(sum(sizes) - plots, sizes[0]))
            if wanted != sizes[0] and lacking:
                splitter.setSizes([wanted, sum(sizes) - wanted])
        self.say_hidden()

    def arrange(self) -> None:
        """The table above the plots where both fit so (the plots then have the whole width), else beside them
        where they fit side by side, else above them in a tab that scrolls."""
        room = self.area.maximumViewportSize()             # the area's size without its scroll bars
        width, height = room.width(), room.height()
        handle = self.splitter.handleWidth()
        least = plots_least(self.splitter.widget(1))
        above = self.controls.height_for(width) + handle + least.height() <= height
        left = max(self.controls.table_width(), self.controls.minimumSizeHint().width())
        beside = not above and left + handle + least.width() <= width
        if orient(self.splitter, width, height, wide=beside):
            total = width if beside else height
            first = left if beside else self.controls.height_for(width)
            self.splitter.setSizes([first, max(0, total - first - handle)])

    def say_hidden(self) -> None:
        hidden = hidden_rows(self.table)
        names = ", ".join(self.table.item(row, 0).text() for row in hidden if self.table.item(row, 0))
        self.hint.setText(f"↓ {len(hidden)} more: scroll the table" if hidden else "")
        self.hint.setToolTip(f"Out of sight: {names}" if hidden else "")
        self.hint.setVisible(bool(hidden))


def bundled_configs() -> dict[str, Path]:
    """The config-only folders shipped in resources/configs (Llama 3 70B, Gemma 3 27B, DeepSeek-V2)."""
    return {p.name: p for p in model_folders(resources_dir() / "configs")}


class NameLine(ElidedLine):
    """The name of the model whose shape is shown: whole where the line has room, elided only where it has not.

    ElidedLine asks for its text's width in whole pixels, rounded; its text is wider by a fraction (91.4 px for
    "translate-en-zh"), so laid out at the width it asked, the translator's name was drawn "translate-en-…"."""

    MOST_PX = 400                    # a long config name wraps the controls no wider than this, elided

    def sizeHint(self) -> QSize:
        whole = math.ceil(QFontMetricsF(self.font()).horizontalAdvance(self.text())) + 1
        return QSize(min(whole, self.MOST_PX), self.fontMetrics().height())


class VariantTable(QWidget):
    """The controls, wrapped to the width, over the table of variants. `config_chosen` carries the path of a config the
    user picked (a file, or a bundled one); the other controls' own signals say the rest."""

    config_chosen = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.source_label = NameLine()             # a long model name elided (show_source), not widening the tab
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
        self.filled: tuple | None = None           # (icon size, rows' cells) as last filled (fill)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        placeholder = self.ranks_edit.placeholderText()
        self.ranks_edit.setMinimumWidth(self.ranks_edit.fontMetrics().horizontalAdvance(placeholder) + 16)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        # The controls wrap like words to the tab's width: in two fixed lines the first asked for 613 px, and
        # beside Learn at 1366 px the tab had 610, so it scrolled sideways, the third plot and the hint cut off.
        self.flow = controls = FlowLayout()
        for widget in (self.source_label, self.open_button, self.bundled_box, self.model_button, self.compare_button,
                       self.dtype_box, self.tokens_box, self.ranks_edit, self.rows_hint):
            controls.addWidget(widget)
        layout.addLayout(controls)
        layout.addWidget(self.table, 1)

    def show_source(self, text: str) -> None:
        """Name where the shape comes from, the whole name in the tooltip. The label asks for its text's width
        again: it kept the width of "no model" it was first laid out with, and SmolLM2's name read "SmolL…"."""
        self.source_label.setText(text)
        self.source_label.setToolTip(text)
        self.source_label.updateGeometry()

    def table_width(self) -> int:
        """The width the table needs to show every column whole."""
        return self.table.horizontalHeader().length() + 2 * self.table.frameWidth()

    def height_for(self, width: int) -> int:
        """The height the controls, wrapped at `width`, and every row of the table take."""
        table = self.table
        rows = table.horizontalHeader().height() + table.verticalHeader().length() + 2 * table.frameWidth()
        if self.table_width() > width:
            rows += table.horizontalScrollBar().sizeHint().height()
        return self.flow.heightForWidth(width) + self.layout().spacing() + rows

    def ranks(self) -> list[int] | None:
        """The MLA ranks typed in (any positive whole numbers in the text), or None for the defaults."""
        found = [int(r) for r in re.findall(r"\d+", self.ranks_edit.text())]
        return [r for r in found if r > 0] or None

    def fill(self, rows) -> None:
        """One line per kv_variants.VariantRow, the model's own variant in bold, each led by its curve's pen. Rows
        the table already shows are not made again: a model's first drawing asked for the same rows twice (its
        tokens set, then its shape), ~70 items and their icons each time."""
        line = self.fontMetrics().height()
        icon = QSize(2 * line, line)
        lines = [((row.variant.name + (" ★ native" if row.variant.native else "")),
                  "—" if row.variant.kv_heads is None else row.variant.kv_heads, row.variant.elements_per_layer,
                  human_bytes(row.bytes_per_token), human_bytes(row.bytes_total), f"{row.ratio_to_mha:.4f}")
                 for row in rows]
        shown = (icon, [(cells, row.variant.native) for cells, row in zip(lines, rows)])
        if shown == self.filled and self.table.rowCount() == len(rows):
            return
        self.filled = shown
        self.table.setRowCount(len(rows))
        self.table.setIconSize(icon)
        pens = variant_pens([row.variant for row in rows])
        for index, (cells, row) in enumerate(zip(lines, rows)):
            for column, value in enumerate(cells):
                self.table.setItem(index, column, table_item(value, bold=row.variant.native))
            self.table.item(index, 0).setIcon(pen_icon(pens[index], self.table.iconSize()))
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
        self.splitter = splitter = QSplitter(Qt.Orientation.Vertical)    # beside the plots where both fit (rows)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.controls)
        splitter.addWidget(QWidget())            # the plots' place until they are built
        splitter.setStretchFactor(0, 0)          # the table keeps what its rows need; the plots take the rest
        splitter.setStretchFactor(1, 1)
        self.rows = VariantRows(self, splitter, self.controls)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidget(splitter)
        self.building = Turns(self)              # the plots' parts still to build, a turn each
        self.building.start(self._build_parts())

    @property
    def plot(self) -> BytesPlot:
        """The bytes plots, built a part a turn from the turn after the panel's first drawing, or at once when
        first asked for: built with the panel, they lengthened the KV lab's first raise by ~55 ms, and built
        whole in the turn after it, with the panel's first drawing and their paint, held the window ~150 ms."""
        if self._plot is None:
            self.building.finish()
        return self._plot

    def _build_parts(self) -> Iterator[None]:
        """Build the plots, yielding between parts of ~15 ms of GUI work each: out of sight until whole, as a
        figure built at once is (shown while its plots were added, their columns came out a few pixels apart),
        and painted once, not once a plot."""
        # The turn after the panel's build runs this timer and the dock's first drawing together (this one, started
        # first, fires first): the figure waits out that turn and the next, or the event loop ran the first
        # drawing, the panel's paint and the empty figure in one go (PanelDock._first_drawing).
        yield
        yield
        plot = BytesPlot(titled=False, plots=False, legend=False)      # the table is its legend
        yield
        yield from plot.add_plots()
        yield
        self.splitter.replaceWidget(1, plot).deleteLater()
        self.splitter.setStretchFactor(1, 1)
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
