"""The natively trained variants side by side: one prompt stepped in MHA, MQA, GQA and MLA models at once.

The four bundled Shakespeare models (resources/models/shakespeare-{mha,mqa,gqa,mla})
differ only in attention. Each runs in its own model worker (its own thread and
Decoder), so one press of Step advances all four together. Each column shows the
text so far, the selected head's attention map A = softmax(Q_h K_hᵀ/√d), the KV
cache bytes in use, and what one more token costs: 2·N_KV·d_h (MHA/GQA/MQA) or
d_c + d_R (MLA) numbers per layer.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Callable

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget

from explorer.app.thread.worker import ModelWorker
from explorer.app.widgets.plot_text import SMALL_TITLE
from explorer.app.window.error_bar import ErrorLine
from explorer.core import kv_variants
from explorer.core.attention_kinds import ATTENTION_KINDS as KINDS
from explorer.core.store import model_folders, resources_dir
from explorer.core.units import human_bytes
from explorer.drawing.heatmap import Heatmap
from explorer.views.maps import attention_matrix

DEFAULT_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"


def bundled_variant_models() -> dict[str, Path]:
    """The four natively trained variants, where the bundled folders exist (kind -> folder)."""
    folders = {path.name: path for path in model_folders(resources_dir() / "models")}
    return {kind: folders[f"shakespeare-{kind}"] for kind in KINDS if f"shakespeare-{kind}" in folders}


def _default_worker():
    return ModelWorker()


class VariantColumn(QWidget):
    """One model: its name, text, attention map of the selected head, and cache bytes."""

    def __init__(self, kind: str, worker, on_trace: Callable[["VariantColumn"], None], prompt: Callable[[], str],
                 parent=None) -> None:
        super().__init__(parent)
        self.kind, self.worker = kind, worker
        self._on_trace, self._prompt = on_trace, prompt
        self.summary = None
        self.trace = None
        self.prompt_tokens = 0
        self.name = QLabel(f"<b>{kind.upper()}</b>")
        self.text = QLabel("loading…")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setMinimumHeight(90)
        self.text.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.bytes = QLabel(" ")
        self.bytes.setWordWrap(True)
        self.view = pg.GraphicsLayoutWidget()
        self.map = Heatmap(self.view.ci, colorbar=False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        self.error_line = ErrorLine()            # a failure: one line, Details… for the rest
        for widget, stretch in ((self.name, 0), (self.error_line, 0), (self.text, 0), (self.view, 1),
                                (self.bytes, 0)):
            layout.addWidget(widget, stretch)
        worker.model_loaded.connect(self._on_model_loaded)
        worker.trace_ready.connect(self._on_trace_ready)
        worker.failed.connect(self.error_line.show_error)

    def _on_model_loaded(self, summary) -> None:
        self.summary = summary
        info = summary.info
        self.name.setText(f"<b>{info.attention.upper()}</b> {html.escape(summary.name)} · N_Q {info.n_heads}, "
                          f"N_KV {info.n_kv_heads}" + (f", d_c {info.mla_rank}" if info.mla_rank else ""))
        self.text.setText("ready")
        if self._prompt():
            self.prefill(self._prompt())            # opened to compare: start at once

    def _on_trace_ready(self, trace) -> None:
        self.trace = trace
        self.prompt_tokens = trace.steps[0].n_new if trace.steps else 0
        self._on_trace(self)

    def prefill(self, prompt: str) -> bool:
        if self.summary is None or self.summary.tokenizer is None:
            return False
        self.worker.prefill(self.summary.tokenizer.encode(prompt).ids)
        return True

    # ----- drawing ------------------------------------------------------------------
    def generated_ids(self) -> list[int]:
        trace = self.trace
        ids = [int(i) for s in trace.steps[1:] for i in s.token_ids]
        return ids + ([int(trace.steps[-1].chosen_id)] if trace.steps[-1].chosen_id is not None else [])

    def draw(self, layer: int, head: int) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            return
        info = trace.model
        tokenizer = self.summary.tokenizer if self.summary is not None else None
        prompt_ids = [int(i) for i in trace.steps[0].token_ids]
        prompt = tokenizer.decode(prompt_ids) if tokenizer is not None else "".join(trace.steps[0].token_text)
        generated = tokenizer.decode(self.generated_ids()) if tokenizer is not None else ""
        self.text.setText(f"{html.escape(prompt)}<b style='color:#ff2d55'>{html.escape(generated)}</b>"
                          .replace("\n", "<br>"))
        layer, head = min(layer, info.n_layers - 1), min(head, info.n_heads - 1)
        self.map.set_matrix(attention_matrix(trace, layer, head), (0.0, 1.0))
        self.map.plot.setTitle(f"layer {layer}, head {head}", size=SMALL_TITLE)
        self.bytes.setText(self.bytes_text())

    def bytes_in_use(self) -> int:
        return int(self.trace.kv_bytes_in_use().sum())

    def bytes_per_token(self) -> int:
        info = self.trace.model
        return kv_variants.bytes_per_token_per_layer(info) * info.n_layers

    def bytes_text(self) -> str:
        info = self.trace.model
        width = (f"(d_c + d_R) = {info.mla_rank} + {info.mla_rope_dim}" if info.attention == "mla" and info.mla_rank
                 else f"2·N_KV·d_h = 2·{info.n_kv_heads}·{info.d_qk}")
        return (f"KV cache in use: <b>{human_bytes(self.bytes_in_use())}</b> for {self.trace.n_tokens} tokens<br>"
                f"per token: <b>{human_bytes(self.bytes_per_token())}</b> = {info.n_layers} layers · {width} "
                f"· {kv_variants.cache_dtype(info)}")


class VariantsWindow(QWidget):
    """A window that opens up to four models and steps the same prompt in all of them."""

    def __init__(self, models: dict[str, str | Path] | None = None,
                 make_worker: Callable[[], object] = _default_worker, prompt: str = DEFAULT_PROMPT,
                 parent=None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("MHA, MQA, GQA and MLA side by side")
        models = bundled_variant_models() if models is None else models
        self.prompt = QLineEdit(prompt)
        self.layer_box, self.head_box = QSpinBox(), QSpinBox()
        self.buttons = {name: QPushButton(name) for name in ("Run", "Step", "Back")}
        controls = QHBoxLayout()
        controls.addWidget(QLabel("prompt"))
        controls.addWidget(self.prompt, 1)
        for label, box in (("layer", self.layer_box), ("head", self.head_box)):
            controls.addWidget(QLabel(label))
            controls.addWidget(box)
            box.valueChanged.connect(lambda _: self.redraw())
        for button in self.buttons.values():
            controls.addWidget(button)
        self.buttons["Run"].clicked.connect(self.run)
        self.buttons["Step"].clicked.connect(self.step)
        self.buttons["Back"].clicked.connect(self.back)
        self.prompt.returnPressed.connect(self.run)
        self.missing = QLabel(" ")
        grid = QGridLayout()
        self.columns: list[VariantColumn] = []
        for index, (kind, path) in enumerate(models.items()):
            column = VariantColumn(kind, make_worker(), self.redraw_column, self.prompt.text, self)
            self.columns.append(column)
            grid.addWidget(column, 0, index)
            column.worker.load(str(path))
        absent = [k for k in KINDS if k not in models]
        if absent:
            self.missing.setText("not installed: " + ", ".join(f"shakespeare-{k}" for k in absent))
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.missing)
        layout.addLayout(grid, 1)
        self.resize(1500, 800)

    # ----- the same press in every model ---------------------------------------------------
    def run(self) -> int:
        """Prefill the prompt in every loaded model; returns how many started."""
        return sum(column.prefill(self.prompt.text()) for column in self.columns)

    def step(self) -> None:
        for column in self.columns:
            if column.trace is not None and column.trace.steps:
                column.worker.step()

    def back(self) -> None:
        for column in self.columns:
            if column.trace is not None and column.trace.steps:
                column.worker.back()

    @property
    def busy(self) -> bool:
        return any(column.worker.busy for column in self.columns)

    # ----- drawing ------------------------------------------------------------------------
    def redraw(self) -> None:
        for column in self.columns:
            self.redraw_column(column)

    def redraw_column(self, column: VariantColumn) -> None:
        traces = [c.trace for c in self.columns if c.trace is not None]
        if traces:
            self.layer_box.setMaximum(max(t.model.n_layers for t in traces) - 1)
            self.head_box.setMaximum(max(t.model.n_heads for t in traces) - 1)
        column.draw(self.layer_box.value(), self.head_box.value())

    def closeEvent(self, event) -> None:
        for column in self.columns:
            column.worker.shutdown(2.0)
        super().closeEvent(event)


def bytes_summary(window: VariantsWindow) -> dict[str, tuple[int, int]]:
    """kind -> (bytes in use, bytes per token) of every column with a trace: what the window shows."""
    return {c.kind: (c.bytes_in_use(), c.bytes_per_token()) for c in window.columns
            if c.trace is not None and c.trace.steps}
