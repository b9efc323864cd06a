"""The Experiments dock's activation-patching tab: which heads (or positions) carry the clean answer.

    map[l, h] = logit(target) - logit(against) at the last position of the corrupted run,
                with head h of layer l (O_h at every position) taken from the clean run,
    drawn as the share of the gap it recovers: (map - corrupt) / (clean - corrupt)

(explorer.core.patching.patch_map; "resid" patches the residual stream entering layer l at one
position). The map runs on the model thread, asked as a PatchMapJob (requests.py), with a progress
bar and Cancel; a cancelled map shows what it reached. Until a map is drawn, the map's place says why it is
empty (no map run yet, one running, one that failed and why, or a model that cannot be patched) as a panel's
note does (base.Panel).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.app.thread.requests import PatchMapJob
from explorer.app.widgets.adaptive import is_wide, orient
from explorer.app.widgets.model_call import ModelCall
from explorer.app.widgets.text_widgets import Caption, LineLabel, frameless_scroll, note_style
from explorer.drawing.heatmap import Heatmap

# The default example: a pair whose prompts differ in one word, so that they have the same number of tokens
# (patching swaps activations position by position), as TransformerLens's demos pair "John"/"Mary". The Eiffel
# Tower/Colosseum pair had 15 and 14 tokens on every bundled Shakespeare tokenizer; this one has as many under
# each bundled and test decoder's tokenizer (Shakespeare's 4,096 pieces, SmolLM2's, Gemma 3's), and its answers
# are one token each (tests/app/test_patching_fits_the_model.py).
CLEAN = "The king is dead; long live the"
CORRUPT = "The queen is dead; long live the"
TARGET, AGAINST = " king", " queen"
NO_MAP_YET = ("No map yet. Press Run map to patch each head (or each position's residual) of the clean run, in "
              "turn, into the corrupted one: the map then shows the share of the logit gap each patch recovers.")
RUNNING = "Patching every site from the clean run into the corrupted one…"
FAILED = "The patching map failed: {}"
REASON_CHARS = 240       # the most of a failure's reason the tab's sentence carries; the whole is in its tooltip
UNEXPECTED = "The job failed:"     # how ModelCall words a fault of the program (not of the prompts)


class DefaultTextField(QLineEdit):
    """A line edit that asks for the width its default text needs, where a QLineEdit asks for 17 x's whatever
    its text: the controls' column is then as wide as its default texts. Its least width is room for
    LEAST_CHARS average characters, never its text's, so no text sets the window's: the target and against
    fields, 35 px at 1366x768 beside Learn, showed 4 letters (issue 22)."""

    LEAST_CHARS = 12

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.default_width = self.fontMetrics().horizontalAdvance(text)

    def _width_for(self, text_px: int) -> int:
        """The field's width with `text_px` for its text: a QLineEdit's asked width less its 17 x's, plus that."""
        return super().sizeHint().width() - 17 * self.fontMetrics().horizontalAdvance("x") + text_px

    def sizeHint(self) -> QSize:
        least = self.LEAST_CHARS * self.fontMetrics().averageCharWidth()
        return QSize(self._width_for(max(self.default_width, least)), super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        least = self.LEAST_CHARS * self.fontMetrics().averageCharWidth()
        return QSize(self._width_for(least), super().minimumSizeHint().height())


class PatchingView(QWidget):
    """Prompts, target and site; Run and Cancel; a progress bar; the map as a heatmap. Side by side in a wide
    panel, the controls half of it but never narrower than their default texts need (until moved by hand), the
    map the rest: with two fifths the form had ~300 px beside a map of 60 % of the dock (issue 22)."""

    MAP_PX = 300          # side by side only where the map keeps this much: 120 px of cells, row labels, colour bar

    def __init__(self, panel) -> None:
        super().__init__()
        self.panel = panel
        self.call = ModelCall(self)
        self.call.progress_changed.connect(self._on_progress)
        self.call.finished.connect(self._on_finished)
        self.call.failed.connect(self._on_failed)
        self.result = None
        self.model_id: int | None = None              # the model the map shown was run on
        self.unfit: str | None = None                 # why this model cannot be patched (an encoder), or None
        self.failure: str | None = None               # why the last map asked of this model failed, or None
        self.caption = Caption()
        self.view = pg.GraphicsLayoutWidget()
        self._heatmap: Heatmap | None = None           # built with the first map (heatmap)
        self.empty = _empty_note()
        self.map_area = QStackedWidget()         # the note until a map is drawn: an empty view is a black box
        self.map_area.addWidget(self.empty)
        self.map_area.addWidget(self.view)
        self.controls = self._controls()
        self.splitter = QSplitter(Qt.Orientation.Vertical)           # side by side when wide (resizeEvent)
        self.splitter.addWidget(self.controls)
        self.splitter.addWidget(self.map_area)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.splitterMoved.connect(self._on_splitter_moved)
        self._moved_by_hand = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter, 1)
        self._show_map_state()

    def _show_map_state(self) -> None:
        """The map once one is drawn; until then the note of why there is none, in words."""
        if self.result is not None:
            self.map_area.setCurrentWidget(self.view)
            return
        failed = None if self.failure is None else FAILED.format(reason(self.failure))
        self.empty.setText(self.unfit or (RUNNING if self.call.running else failed or NO_MAP_YET))
        self.empty.setToolTip("" if self.unfit or self.call.running or failed is None else self.failure)
        self.map_area.setCurrentWidget(self.empty)

    def _controls(self) -> QWidget:
        grid = QGridLayout()
        self.clean, self.corrupt = DefaultTextField(CLEAN), DefaultTextField(CORRUPT)
        self.target, self.against = DefaultTextField(TARGET), DefaultTextField(AGAINST)
        self.site = QComboBox()
        self.site.addItems(["head", "resid"])
        site = QHBoxLayout()
        site.addWidget(self.site)
        site.addStretch(1)
        # A row each, as wide as the prompts: on one row with "against" and the site they had ~35 px each
        fields = (("clean", self.clean), ("corrupted", self.corrupt), ("target", self.target),
                  ("against", self.against), ("site", site))
        for row, (name, field) in enumerate(fields):
            grid.addWidget(QLabel(name), row, 0)
            if isinstance(field, QHBoxLayout):
                grid.addLayout(field, row, 1)
            else:
                grid.addWidget(field, row, 1)
        buttons = QHBoxLayout()
        self.run_button, self.cancel_button = QPushButton("Run map"), QPushButton("Cancel")
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.call.cancel)
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        # The words beside the bar, not on it: Fusion centres a bar's text, and the chunk growing under it
        # covered its first digits ("54 of 270" read "4 of 270" at 1366 px). Elided, whole in the tooltip.
        self.progress.setTextVisible(False)
        # On a line of their own under the bar: beside it, in the 306 px column the Experiments dock beside
        # Learn gives the controls at 1366 px, they had 33 px and read "9 o…". Elided, whole in the tooltip.
        self.progress_words = LineLabel()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress, 1)
        scroll = self.caption.scrolled()        # the caption whole where there is room, never a taller window
        controls = QWidget()
        column = QVBoxLayout(controls)
        column.setContentsMargins(0, 0, 0, 0)
        form = QWidget()          # a row a field: scrolled where the dock is short, never a taller window
        form.setLayout(grid)      # (in one 800x600 window it asked 636 px)
        grid.setContentsMargins(0, 0, 0, 0)
        column.addWidget(frameless_scroll(form))
        column.addLayout(buttons)
        column.addWidget(self.progress_words)
        column.addWidget(scroll, 1)
        return controls

    @property
    def heatmap(self) -> Heatmap:
        """The map, built when first drawn: the tab lies behind the interventions' and is empty until a map is
        run, and building it cost the Experiments tab's first raise for nothing."""
        if self._heatmap is None:
            self._heatmap = Heatmap(self.view.ci, colormap="CET-D1", axes=("left", "top"))
        return self._heatmap

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        wanted = self.controls.sizeHint().width()
        wide = is_wide(self.width(), self.height(), wanted + self.MAP_PX)
        if orient(self.splitter, self.width(), self.height(), (2, 3), wide=wide):
            self._moved_by_hand = False
        if wide and not self._moved_by_hand:
            room = self.splitter.width() - self.splitter.handleWidth()
            share = max(wanted, min(room // 2, room - self.MAP_PX))         # half where the map keeps enough
            self.splitter.setSizes([share, room - share])

    def _on_splitter_moved(self, _position: int, _index: int) -> None:
        self._moved_by_hand = True           # a person's choice of widths is kept until the parts turn

    def forget(self, model_id: int, unfit: str | None) -> None:
        """Another model or run: a map of another model is cleared (its layers and heads are not this one's),
        and so is its failure; `unfit` says why this model cannot be patched, and Run waits for one that can.
        The state is the model's now, whatever the model before said: the reason an encoder cannot be patched
        stands once, in the map's place, and goes with it (it stayed in the caption beside a decoder's Run)."""
        self.unfit = unfit
        if model_id != self.model_id and (self.result is not None or self.model_id is not None):
            self.result, self.model_id, self.failure = None, None, None
            if self._heatmap is not None:
                self._heatmap.clear()
            self.progress.setValue(0)
            self.progress_words.setText("")
            self.caption.set_plain("")
        if not self.call.running:
            self._done()
        if unfit:
            self.caption.set_plain("")            # the map's place says why; said twice it stood left and right
        self._show_map_state()

    def drop_work(self) -> None:
        """A map still running is dropped with the run or model it was asked under: say so, and Run again."""
        if self.call.running:
            self.call.drop_work()
            self._done()
            self.caption.set_plain("The patching map was dropped: another run or model came. Press Run map again.")

    def run(self) -> bool:
        if self.unfit:
            return False
        job = PatchMapJob(self.clean.text(), self.corrupt.text(), self.target.text(), self.against.text(),
                          self.site.currentText())                      # run by core_api on the model thread
        started = self.call.start(job, self.panel.executor or self.panel.session.requests.model_job_requested.emit)
        if started:
            self.model_id, self.failure = self.panel.session.model_id, None
            self.progress.setValue(0)
            self.progress_words.setText("")
            self.run_button.setEnabled(False)
            self.cancel_button.setEnabled(True)
            self.caption.set_plain("patching every site from the clean run into the corrupted one…")
            self._show_map_state()
        return started

    def _on_progress(self, fraction: float, what: str) -> None:
        self.progress.setValue(int(1000 * fraction))
        self.progress_words.setText(what)

    def _done(self) -> None:
        self.run_button.setEnabled(not self.unfit)
        self.cancel_button.setEnabled(False)
        self._show_map_state()

    def _on_failed(self, message: str) -> None:
        """The map's place says why, in one bounded sentence (the whole reason in its tooltip), where a map drawn
        before gives way to it. A fault of the program rather than of the prompts also goes to the panel's error
        line, whose Details… hold it whole."""
        if not message:
            self._done()                  # dropped with its run or model (drop_work): no failure to tell
            return
        self.failure, self.result = message, None      # a map of other prompts would answer another question
        if self._heatmap is not None:
            self._heatmap.clear()
        self._done()
        self.caption.set_plain("")
        if message.startswith(UNEXPECTED):
            self.panel.error_line.show_error(message)

    def _on_finished(self, result) -> None:
        self.result = result
        self._done()
        values = result.values                                                   # (L, H) or (L, T)
        columns = [f"H{h}" for h in range(values.shape[1])] if result.site == "head" else \
            [str(p) for p in range(values.shape[1])]
        rows = [f"L{l}" for l in range(len(values))]
        metric = "logit diff" if result.metric == "logit_diff" else "probability"
        gap = result.clean - result.corrupt
        changes = values - result.corrupt                                        # what each patch moved
        largest = float(np.nanmax(np.abs(changes))) if np.isfinite(changes).any() else 0.0
        finite = np.isfinite(changes).any()

        def site(at) -> str:
            return f"L{at[0]}.{'H' if result.site == 'head' else '@'}{at[1]}"
        said = f"{metric}: clean {result.clean:.3f}, corrupted {result.corrupt:.3f}; "
        if gap > 0 and largest <= MAX_SHARE * gap:
            shares = changes / gap                                               # 0: corrupted, 1: clean
            best = np.unravel_index(np.nanargmax(values), values.shape) if finite else None
            self.heatmap.set_matrix(shares, (-1.0, 1.0), row_labels=rows, col_labels=columns)
            said += "colour: the share of that gap each patch recovers (0 corrupted, 1 clean)." + (
                "" if best is None else
                f" The largest: {site(best)} at {values[best]:.3f} ({shares[best]:.0%} of the gap).")
        else:
            # No gap to share out (drive28: -266% "of" a gap of -0.002 on saturated colours): each patch's change,
            # and the one named is the change the map shows strongest, whichever way (drive29: it named the
            # highest value, a pale cell, beside a deep blue one)
            why = ("the clean prompt does not raise it above the corrupted one" if gap <= 0 else
                   f"that gap is too small beside the patches' changes (up to {largest:.3f})")
            moved = np.unravel_index(np.nanargmax(np.abs(changes)), changes.shape) if finite else None
            self.heatmap.set_matrix(changes, (-(largest or 1.0), largest or 1.0), row_labels=rows, col_labels=columns)
            said += (f"{why}, so there is no share of it to show; colour: each patch's change of the {metric}." + (
                "" if moved is None else
                f" The largest change: {site(moved)}, {changes[moved]:+.3f} (to {values[moved]:.3f})."))
        self.caption.set_plain(said + ("" if result.complete else " Cancelled: the blank cells were not run."))


MAX_SHARE = 20      # a patch moving the metric by more than 20 gaps: the shares are noise over a gap near 0


def reason(message: str) -> str:
    """A failure's reason as the end of one sentence: its first line, cut to REASON_CHARS; a fault of the
    program is named as such (its words, a Python exception's, are for the error line's Details…)."""
    if message.startswith(UNEXPECTED):
        return "an unexpected error (Details… in the line below)."
    first = next((line.strip() for line in message.splitlines() if line.strip()), "no reason given")
    if len(first) > REASON_CHARS:
        return first[:REASON_CHARS - 1] + "…"
    return first if first.endswith((".", "…", "?", "!")) else first + "."


def _empty_note() -> QLabel:
    """The map's place before a map: a sentence on the panel note's ground (base.Panel.note), never sizing the
    tab (its text wraps, or is cut, in whatever room the map has)."""
    note = QLabel()
    note.setObjectName("patching_empty")
    note.setWordWrap(True)
    note.setAlignment(Qt.AlignmentFlag.AlignCenter)
    note.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
    note.setStyleSheet(note_style())
    return note
