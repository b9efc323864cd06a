"""The KV lab's what-if tab: a conversion's controls, and its result step by step beside both attention maps.

A what-if result (explorer.core.what_if.WhatIf) holds, per decoding step, KL(p_original ‖ p_converted)
of the next-token distributions, whether both pick the same top-1 token, and the bytes each cache keeps
(DeepSeek-V2, Table 1: MHA 2·n_h·d_h, GQA 2·n_g·d_h, MQA 2·d_h, MLA d_c + d_R per token per layer). This
view shows them as a table and a summary line, and A_h of the selected head in both models. It holds
widgets only: the panel decides when a conversion may run, and what_if_runner.WhatIfRunner runs it.

Beside Learn at 1366x768 the tab is ~610 px wide: the table beside the maps had a horizontal scroll bar, the
maps' titles read "original: layer 0…" and "mqa: layer 0, h…" over maps 130 px wide and 370 high, and the bar's
"32% decoding both models" wrapped to a second line inside its one. The maps now go below the table where each
gets a larger square there, the layer and head are said once above both, and the bar says its stage where it fits.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QBoxLayout,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.app.widgets.adaptive import orient
from explorer.app.widgets.plot_text import TITLE
from explorer.app.widgets.steady_progress import word_lines
from explorer.app.window.error_bar import ErrorLine
from explorer.core import kv_variants as kv
from explorer.core.units import human_bytes
from explorer.drawing.heatmap import Heatmap
from explorer.drawing.plot_title import FittingTitle
from explorer.views.words import plural

STEP_COLUMNS = ("step", "next token", "KL (nats)", "top-1", "cache change")
STEPS_CSV_HEADER = "step,position,token_id,kl,top1_agrees,original_bytes,converted_bytes,bytes_saved"
MAPS_SHARE = 0.6             # of the height, the maps' below the table


def table_item(value, bold: bool = False) -> QTableWidgetItem:
    """A read-only cell showing `value` (bold: the model's own variant)."""
    item = QTableWidgetItem(str(value))
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if bold:
        font = QFont()
        font.setBold(True)
        item.setFont(font)
    return item


def steps_csv(comparisons) -> str:
    """A what-if result's steps as CSV, one row per step (KL with every digit, bytes as integers)."""
    lines = [STEPS_CSV_HEADER]
    lines += [f"{r.step},{r.position},{r.token_id},{r.kl!r},{r.top1_agrees},{r.original_bytes},"
              f"{r.converted_bytes},{r.bytes_saved}" for r in comparisons]
    return "\n".join(lines) + "\n"


def cache_delta(row) -> str:
    """A step's converted cache less the original's, signed: "+1.85 MiB" where it grows, "−512 B" where it shrinks."""
    grows = row.converted_bytes - row.original_bytes
    return ("+" if grows > 0 else "−" if grows < 0 else "") + human_bytes(abs(grows))


def result_summary(result) -> str:
    """One line for a what-if result: mean KL, top-1 agreement, the cache saved (or grown, to MHA) at the last
    step, and how far the conversion moved the K/V maps (the mean over layers of ‖W − W'‖_F / ‖W‖_F)."""
    rows = result.comparisons
    agree = np.mean([r.top1_agrees for r in rows]) if rows else 0.0
    mean_kl = np.mean([r.kl for r in rows]) if rows else 0.0
    cache = kv.cache_change(rows[-1].original_bytes, rows[-1].converted_bytes) if rows else kv.cache_change(0, 0)
    tokens = plural(rows[-1].position + 1 if rows else 0, "token")
    return (f"{result.variant}: mean KL {mean_kl:.4g} nats, top-1 agreement {100 * agree:.0f}%, "
            f"{cache} at {tokens}; K/V map moved {100 * float(np.mean(result.relative_error)):.1f}%. "
            f"{followed_words(result)}")


def followed_words(result) -> str:
    """Whose tokens the rows feed: the session's for the steps it has, then the original's greedy choice."""
    followed, steps = getattr(result, "followed", 0), len(result.comparisons)
    if not followed:
        return "The rows follow the original's greedy choice from the prompt."
    if followed >= steps:
        return f"The rows follow this session's tokens ({plural(followed, 'step')})."
    return (f"The rows follow this session's tokens for its {plural(followed, 'step')}, "
            "then the original's greedy choice.")


class StageWords(QLabel):
    """A progress bar's words on one line (steady_progress.word_lines), a text longer than the line cut after its
    last whole word with "…", whole in the tooltip; one line high whatever the text, so the row keeps its place.
    Cut at any character it read "39% decodi…" at 1366x768 (drive21 m1); on two lines in the ~85 px left it beside
    the controls, "21%" over "replicating…" (issue 22): the bar and its words now have a row of their own."""

    LINES = 1

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._whole = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self.LINES * self.fontMetrics().lineSpacing())

    def text(self) -> str:
        return self._whole

    def shown(self) -> str:
        """The text drawn, its lines parted by newlines."""
        return super().text()

    def setText(self, text: str) -> None:
        self._whole = text
        self._fit()

    def _fit(self) -> None:
        width, whole = self.contentsRect().width(), self._whole
        lines = word_lines(whole, self.fontMetrics(), width, self.LINES) if width > 0 and whole.strip() else [whole]
        super().setText("\n".join(lines))
        self.setToolTip(whole if " ".join(lines).split() != whole.split() else "")

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()


class StageBar(QProgressBar):
    """A progress bar whose format is "%p% <stage>", its words drawn beside it in `words` (StageWords: one line,
    whole words), not on it: Fusion centres a bar's text, and the chunk growing under it hid
    the first digit ("30%" read "80%" beside Learn at 1366 px, issue 22)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setTextVisible(False)
        self.words = StageWords()
        self.words.setMinimumWidth(self.words.fontMetrics().horizontalAdvance("100%…"))   # the share always whole
        self.setMinimumWidth(self.words.minimumWidth())      # a QProgressBar's least width is its asked one: the
        # words beside it then widened the tab beside Learn
        self.valueChanged.connect(self._say)

    def setFormat(self, form: str) -> None:
        super().setFormat(form)
        self._say()

    def _say(self) -> None:
        self.words.setText(self.text())          # the whole: the label elides what it cannot show


class WhatIfView(QWidget):
    """The target and step count, Convert and Cancel with a progress bar, a summary line, the one error line,
    the per-step table and the selected head's attention map in the original and the converted model."""

    PROGRESS_CHARS = 40    # average characters the bar and its words keep beside the controls (12 the bar's)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.variant_box = QComboBox()
        self.steps_box = QSpinBox()
        self.steps_box.setRange(1, 4096)
        self.steps_box.setValue(8)
        self.steps_box.setPrefix("steps ")
        self.run_button = QPushButton("Convert and compare")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = StageBar()
        self.progress.setRange(0, 100)
        for widget in (QLabel("what if:"), self.variant_box, self.steps_box, self.run_button, self.cancel_button):
            row.addWidget(widget)
        row.addStretch(1)
        # Beside the controls where the bar and its words keep PROGRESS_CHARS, else a row of their own
        # (resizeEvent): beside them in the tab's ~610 px beside Learn at 1366x768 the bar had ~45 px and its words
        # two lines ("21%" over "replicating…", issue 22); a row of their own at 1920x1080 took 24 px of the maps'
        # height, 100 px left them
        progress_row = QHBoxLayout()
        progress_row.addWidget(self.progress, 1)
        progress_row.addWidget(self.progress.words, 2)
        self.top = QBoxLayout(QBoxLayout.Direction.TopToBottom)
        self.top.addLayout(row, 0)
        self.top.addLayout(progress_row, 1)
        self._controls = row
        layout.addLayout(self.top)
        # Why no target (or no MLA target) is offered: a line of its own, so that a run's result or cancellation,
        # on the summary line below, never replaces it nor is replaced by it (Gemma's "No MLA target" note wrote
        # over each result, drive27)
        self.targets_note = QLabel()
        self.targets_note.setWordWrap(True)
        self.targets_note.hide()
        layout.addWidget(self.targets_note)
        self.run_summary = QLabel(" ")
        self.run_summary.setWordWrap(True)
        layout.addWidget(self.run_summary)
        self.error_line = ErrorLine()             # a failed conversion: one line, Details… for the rest
        layout.addWidget(self.error_line)
        self.lower = lower = QSplitter(Qt.Orientation.Horizontal)
        self.steps_table = QTableWidget(0, len(STEP_COLUMNS))
        self.steps_table.setHorizontalHeaderLabels(STEP_COLUMNS)
        self.steps_table.verticalHeader().setVisible(False)
        lower.addWidget(self.steps_table)
        self.maps = pg.GraphicsLayoutWidget()
        self._heatmaps: tuple[Heatmap, Heatmap] | None = None      # built with the first result (heatmaps())
        self.caption: FittingTitle | None = None  # "layer l, head h" above both maps (heatmaps())
        lower.addWidget(self.maps)
        lower.setChildrenCollapsible(False)
        lower.installEventFilter(self)            # its resizes: the maps below the table or beside it (arrange)
        layout.addWidget(lower, 1)
        self.clear()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        least = self._controls.sizeHint().width() + self.top.spacing() + round(
            self.PROGRESS_CHARS * self.fontMetrics().averageCharWidth())
        wide = self.width() >= least
        self.top.setDirection(QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom)

    def heatmaps(self) -> tuple[Heatmap, Heatmap]:
        """The original's and the converted model's map under a caption they share, built when first asked for:
        they stay hidden until a conversion gives a result, and building them cost the KV lab's first raise ~30 ms
        for nothing."""
        if self._heatmaps is None:
            self.caption = FittingTitle("", size=TITLE)
            self.maps.ci.addItem(self.caption, row=0, col=0, colspan=2)
            self._heatmaps = (Heatmap(self.maps.ci, row=1, col=0, colorbar=False),
                              Heatmap(self.maps.ci, row=1, col=1, colorbar=False))
        return self._heatmaps

    def eventFilter(self, watched, event) -> bool:
        if watched is self.lower and event.type() == QEvent.Type.Resize:
            self.arrange()
        return super().eventFilter(watched, event)

    def table_width(self) -> int:
        """The width the steps table needs to show every column whole, with room for its scroll bar."""
        table = self.steps_table
        return (table.horizontalHeader().length() + 2 * table.frameWidth()
                + table.verticalScrollBar().sizeHint().width())

    def arrange(self, again: bool = False) -> None:
        """The maps beside the table (as wide as its columns) where each map's square is larger there than
        below it (MAPS_SHARE of the height, the whole width), else below; `again`: the shares set anew, as they
        are when the arrangement changes."""
        if self.maps.isHidden():
            return
        width, height = self.lower.width(), self.lower.height()
        table = self.table_width()
        beside = min((width - table) / 2, height) >= min(width / 2, MAPS_SHARE * height)
        if orient(self.lower, width, height, wide=beside) or again:
            first = table if beside else round((1 - MAPS_SHARE) * height)
            total = width if beside else height
            self.lower.setSizes([first, max(0, total - first - self.lower.handleWidth())])

    @property
    def original_map(self) -> Heatmap:
        return self.heatmaps()[0]

    @property
    def converted_map(self) -> Heatmap:
        return self.heatmaps()[1]

    def say_why_no_targets(self, why: str) -> None:
        """Say `why` no target (or no MLA target) is offered, on its own line; "": the line goes."""
        self.targets_note.setText(why)
        self.targets_note.setVisible(bool(why))

    def show_progress(self, fraction: float, what: str) -> None:
        self.progress.setValue(int(round(100 * fraction)))
        self.progress.setFormat(f"%p% {what}")
        self.progress.setToolTip(what)

    def reset_progress(self) -> None:
        """No conversion running: the bar empty and wordless (a cancelled run's last step must not stay
        written on it, nor follow the user to another model)."""
        self.progress.setValue(0)
        self.progress.setFormat("")
        self.progress.setToolTip("")

    def show_working(self, variant: str, steps: int) -> None:
        """A conversion to `variant` has started: the result of the target before (its table, summary and
        maps) goes, and the summary names the target now converting, so nothing on screen reads as its result."""
        self.clear()
        self.run_summary.setText(f"Converting to {variant} and comparing {plural(steps, 'step')}…")
        self.show_progress(0.0, f"{variant}: starting")

    def show_cancelling(self, variant: str) -> None:
        """Cancel was pressed: the conversion to `variant` stops at its next check; Cancel is not pressed twice."""
        self.cancel_button.setEnabled(False)
        self.run_summary.setText(f"Cancelling the conversion to {variant}…")
        self.progress.setFormat("%p% cancelling…")
        self.progress.setToolTip("cancelling…")

    def show_no_result(self, variant: str, why: str) -> None:
        """A conversion to `variant` ended without a result (cancelled, failed): say which, and why."""
        self.clear()
        self.run_summary.setText(f"No result for {variant}: {why}" if variant else why[:1].upper() + why[1:])

    def show_result(self, result, display_token) -> None:
        """Fill the step table and the summary; a step's token is its text in the original trace, or
        `display_token(id)` where it lies beyond it."""
        rows = result.comparisons
        self.steps_table.setRowCount(len(rows))
        texts = result.original.token_text
        for index, row in enumerate(rows):
            token = texts[row.position + 1] if row.position + 1 < len(texts) else display_token(row.token_id)
            cells = (row.step, token, f"{row.kl:.4g}", "✓" if row.top1_agrees else "✗", cache_delta(row))
            for column, value in enumerate(cells):
                self.steps_table.setItem(index, column, table_item(value))
        self.steps_table.resizeColumnsToContents()
        self.run_summary.setText(result_summary(result))
        self.show_progress(1.0, "done")

    def show_maps(self, result, layer: int, head: int) -> None:
        """A_h of `head` in `layer` (each clamped to the model's) of the original and the converted model."""
        if self.maps.isHidden():
            # shown again, a splitter's widget keeps the size it had while hidden (none): the maps came back
            # 32 px wide beside the table
            self.maps.show()
            self.arrange(again=True)
        shown = []
        for heatmap, trace, label in ((self.original_map, result.original, "original"),
                                      (self.converted_map, result.converted, result.variant)):
            shown_layer = min(layer, trace.model.n_layers - 1)
            shown_head = min(head, trace.model.n_heads - 1)
            heatmap.set_matrix(trace.attention(shown_layer)[shown_head].astype(np.float32), levels=(0.0, 1.0))
            heatmap.plot.setTitle(label)
            shown.append(f"layer {shown_layer}, head {shown_head}")
        # both models have the original's layers and query heads: the place is said once, above both
        self.caption.setText(shown[0] if shown[0] == shown[1] else f"{shown[0]} / {shown[1]}")

    def clear(self) -> None:
        """No result: an empty table and summary, the progress empty and no maps (two blank frames read as a
        result that failed to draw)."""
        self.steps_table.setRowCount(0)
        self.run_summary.setText(" ")
        self.reset_progress()
        for heatmap in self._heatmaps or ():
            heatmap.clear()
        self.maps.hide()
