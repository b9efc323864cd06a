"""The Experiments dock's activation-patching tab: which heads (or positions) carry the clean answer.

    map[l, h] = logit(target) - logit(against) at the last position of the corrupted run,
                with head h of layer l (O_h at every position) taken from the clean run,
    drawn as the share of the gap it recovers: (map - corrupt) / (clean - corrupt)

(explorer.core.patching.patch_map; "resid" patches the residual stream entering layer l at one
position). The map runs on the model thread, asked as a PatchMapJob (requests.py), with a progress
bar and Cancel; a cancelled map shows what it reached.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from explorer.app.thread.requests import PatchMapJob
from explorer.app.widgets.adaptive import orient
from explorer.app.widgets.model_call import ModelCall
from explorer.app.widgets.text_widgets import WrappedText
from explorer.drawing.heatmap import Heatmap

CLEAN = "The Eiffel Tower is located in the city of"
CORRUPT = "The Colosseum is located in the city of"


class PatchingView(QWidget):
    """Prompts, target and site; Run and Cancel; a progress bar; the map as a heatmap."""

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
        grid = QGridLayout()
        self.clean, self.corrupt = QLineEdit(CLEAN), QLineEdit(CORRUPT)
        self.target, self.against = QLineEdit(" Paris"), QLineEdit(" Rome")
        self.site = QComboBox()
        self.site.addItems(["head", "resid"])
        for row, (name, widget) in enumerate((("clean", self.clean), ("corrupted", self.corrupt))):
            grid.addWidget(QLabel(name), row, 0)
            grid.addWidget(widget, row, 1, 1, 5)
        for col, (name, widget) in enumerate((("target", self.target), ("against", self.against),
                                             ("site", self.site))):
            grid.addWidget(QLabel(name), 2, 2 * col)
            grid.addWidget(widget, 2, 2 * col + 1)
        buttons = QHBoxLayout()
        self.run_button, self.cancel_button = QPushButton("Run map"), QPushButton("Cancel")
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.call.cancel)
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress, 1)
        self.caption = WrappedText()
        self.view = pg.GraphicsLayoutWidget()
        self._heatmap: Heatmap | None = None           # built with the first map (heatmap)
        controls = QWidget()
        column = QVBoxLayout(controls)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(grid)
        column.addLayout(buttons)
        column.addWidget(self.caption)
        column.addStretch(1)
        self.splitter = QSplitter(Qt.Orientation.Vertical)           # side by side when wide (resizeEvent)
        self.splitter.addWidget(controls)
        self.splitter.addWidget(self.view)
        self.splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter, 1)

    @property
    def heatmap(self) -> Heatmap:
        """The map, built when first drawn: the tab lies behind the interventions' and is empty until a map is
        run, and building it cost the Experiments tab's first raise for nothing."""
        if self._heatmap is None:
            self._heatmap = Heatmap(self.view.ci, colormap="CET-D1", axes=("left", "top"))
        return self._heatmap

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        orient(self.splitter, self.width(), self.height(), (2, 3))

    def forget(self, model_id: int, unfit: str | None) -> None:
        """Another model or run: a map of another model is cleared (its layers and heads are not this one's);
        `unfit` says why this model cannot be patched, and Run waits for one that can."""
        self.unfit = unfit
        if model_id != self.model_id and (self.result is not None or self.model_id is not None):
            self.result, self.model_id = None, None
            if self._heatmap is not None:
                self._heatmap.clear()
            self.progress.setValue(0)
            self.progress.setFormat("%p%")
            self.caption.set_plain("")
        if not self.call.running:
            self._done()
        if unfit:
            self.caption.set_plain(unfit)

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
            self.model_id = self.panel.session.model_id
            self.progress.setValue(0)
            self.run_button.setEnabled(False)
            self.cancel_button.setEnabled(True)
            self.caption.set_plain("patching every site from the clean run into the corrupted one…")
        return started

    def _on_progress(self, fraction: float, what: str) -> None:
        self.progress.setValue(int(1000 * fraction))
        self.progress.setFormat(what)

    def _done(self) -> None:
        self.run_button.setEnabled(not self.unfit)
        self.cancel_button.setEnabled(False)

    def _on_failed(self, message: str) -> None:
        self._done()
        self.caption.set_plain("The patching map failed.")
        self.panel.error_line.show_error(message)

    def _on_finished(self, result) -> None:
        self._done()
        self.result = result
        values = result.values                                                   # (L, H) or (L, T)
        gap = result.clean - result.corrupt
        recovered = (values - result.corrupt) / gap if gap else np.zeros_like(values)   # 0: corrupted, 1: clean
        columns = [f"H{h}" for h in range(values.shape[1])] if result.site == "head" else \
            [str(p) for p in range(values.shape[1])]
        self.heatmap.set_matrix(recovered, (-1.0, 1.0), row_labels=[f"L{l}" for l in range(len(values))],
                                col_labels=columns)
        best = np.unravel_index(np.nanargmax(values), values.shape) if np.isfinite(values).any() else None
        where = "" if best is None else (
            f" The largest: L{best[0]}.{'H' if result.site == 'head' else '@'}{best[1]} at {values[best]:.3f}"
            + (f" ({(values[best] - result.corrupt) / gap:.0%} of the gap)." if gap else "."))
        self.caption.set_plain(
            f"logit diff: clean {result.clean:.3f}, corrupted {result.corrupt:.3f}; colour: the share of that gap "
            "each patch recovers (0 corrupted, 1 clean)." + where
            + ("" if result.complete else " Cancelled: the blank cells were not run."))
