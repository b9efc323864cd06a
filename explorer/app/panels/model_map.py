"""Model map: the loaded model's computation drawn as a diagram (views.model_graph), where you are in it lit.

    tokens → E[id] (+ P) → L × [norm → attention → W^O → + → norm → FFN or MoE → +] → norm → W_U → softmax

Each block is a column, read top to bottom; the blocks run left to right, an encoder's over the
decoder's. Every edge carries its live shape for the prompt's T tokens. The selected layer's
block is outlined and its attention node names the selected head; clicking a node selects its
layer and brings forward the panel that shows that piece (through the window's registry of
docks, never by calling the panel). From 30 blocks on, the others fold into one node each.
The config's facts (norms, FFN or experts, the encoder's depth) are asked of the model thread
once per model; until they come the map draws from the model's info alone. A Stop while they are asked
holds (base.Panel.stop_holds): the map says so, beside Compute, and asks nothing again until the person
presses it, or another model or run comes. A decoding step draws
nothing anew: the boxes and lines stay (widgets.model_map_items) and only what they say changes, the
shapes for the new T and the new row's path.
"""
from __future__ import annotations

import dataclasses
import functools
from html import escape
from pathlib import Path

from PySide6.QtCore import QEvent, QRectF
from PySide6.QtGui import QAction, QColor, QGuiApplication, QImage, QPainter
from PySide6.QtWidgets import QGraphicsScene, QGraphicsTextItem, QGraphicsView

from explorer.app.figures import export_dialogs
from explorer.app.panels.base import Drawn, Panel, formula_html
from explorer.app.state.session import Selection
from explorer.app.widgets.asking import Asker
from explorer.app.widgets.model_map_items import (
    ACCENT,
    NEW_ROW,
    PANEL_OF,
    EdgeItem,
    NodeItem,
    braced,
    edge_font,
    edge_path,
)
from explorer.app.widgets.model_map_layout import GAP_X, headings, lay_out
from explorer.app.widgets.text_widgets import WrappedText
from explorer.drawing import export
from explorer.views.model_graph import FOLD_AT, Edge, ModelGraph, Node, model_graph

__all__ = ["ACCENT", "EMPTY", "NEW_ROW", "ModelMapPanel"]
MIN_SCALE = 0.7
STOPPED = "reading the model's config (its norms, FFN or experts); the map is drawn from its info alone"
EMPTY = "No model is open: choose one in the Model box (or File ▸ Open), and its map is drawn here."


def config_job(loaded, progress, cancel) -> dict:
    """On the model thread: the loaded model's config as a plain dict (a dataclass of numbers and names)."""
    config = getattr(loaded, "config", None)
    return dataclasses.asdict(config) if dataclasses.is_dataclass(config) else {}


def label_html(node: Node, head_note: str = "") -> str:
    """A box's label in the panels' notation, with the selection's note under it."""
    note = f"<br><small>{escape(head_note)}</small>" if head_note else ""
    return f"<b>{rich(node.label)}</b>" + note


def edge_html(edge: Edge) -> str:
    return rich(edge.label)


@functools.lru_cache(maxsize=1024)
def rich(text: str) -> str:
    """`text` in the panels' notation, as rich text (the same few labels, again at every step)."""
    return formula_html(braced(text))


class ModelMapPanel(Panel):
    title = "Model map"
    object_name = "model_map"
    needs_trace = False
    stop_holds = True           # a Stop cancels asking the config until Compute (base.Panel.stop_work)

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.executor = None                         # None: the session's model thread (tests give their own)
        self.scene = QGraphicsScene(self)
        self.view = QGraphicsView(self.scene)
        self.view.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.view.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        # a diagram on its own paper, as exported: its fills and text are fixed light and dark colours, which the
        # dark theme's base made dark on dark (the layer headings, the lines, the shapes)
        self.view.setBackgroundBrush(QColor("white"))
        self.body.addWidget(self.view, 1)
        # A decoding step's words, wrapped under the map: at the end of the one-line readout they were cut,
        # "…flows along the te…" at 1366x768 (drive21 m4).
        self.step_note = WrappedText()
        self.step_note.setVisible(False)
        self.body.addWidget(self.step_note)
        self.graph: ModelGraph | None = None
        self.items: dict[str, NodeItem] = {}
        self.edges: list[EdgeItem] = []                  # in the order of the graph's edges
        self.headings: list[QGraphicsTextItem] = []     # "layer 3" over each block's column
        self.config: dict | None = None
        self._drawn_key = None
        self.asker = Asker(self, self._on_config, lambda _message: None)
        self.set_formula("h ← h + W^O·Attn(Norm(h));  h ← h + FFN(Norm(h));  p = softmax(Norm(h) W_U)")
        session.model_changed.connect(self._on_model_changed)
        self._ask_config()

    # ----- state ------------------------------------------------------------------------------
    def drawn(self):
        """The base contract's state, and "empty" while no model is open (the map needs no trace)."""
        if self.session.model is None:
            return Drawn("empty", why=EMPTY)
        return super().drawn()

    def view_state(self) -> tuple[str, object]:
        if self.session.model is None:
            return "empty", EMPTY
        return super().view_state()

    def _on_model_changed(self, model) -> None:
        """Nothing of the previous model stays: its graph, its config and its items go at once."""
        self.config, self.graph, self._drawn_key = None, None, None
        self.items, self.edges = {}, []
        self.scene.clear()
        self.step_note.setVisible(False)                # its words were the previous trace's
        self.asker.forget()
        self._ask_config()
        self.refresh()

    def _on_tokens_changed(self, tokens) -> None:
        if self.session.trace is None:
            self.refresh()

    def _config_key(self) -> tuple:
        return ("config", getattr(self.session, "model_id", None), self.session.model)

    def _ask_config(self) -> None:
        if self.session.model is not None and self.config is None:
            self.asker.ask(self._config_key(), config_job)

    def _config_stopped(self) -> bool:
        return self.session.model is not None and self.config is None and self.asker.stopped == self._config_key()

    def _on_config(self, key, config) -> None:
        if key != self._config_key():
            return
        self.config = dict(config or {})            # kept even when empty: asked once per model
        if self.config:
            self._drawn_key = None
            self.refresh()

    # ----- what is drawn ----------------------------------------------------------------------
    def token_counts(self) -> tuple[int, int]:
        """(T, S): the decoder's tokens (the trace's, else the prompt's) and an encoder's source tokens."""
        trace, model = self.session.trace, self.session.model
        live = self.session.tokens
        live_count = len(live.ids) if live is not None else 1
        if trace is None:
            return (1, live_count) if model is not None and model.is_encoder_decoder else (live_count, 0)
        source = getattr(trace, "encoder", None)
        count = source.n_new if source is not None else 0
        return max(1, trace.n_tokens), count

    def redraw(self) -> None:
        model = self.session.model
        self._ask_config()                           # again after another run dropped the question
        self.show_stopped(STOPPED if self._config_stopped() else None)
        if model is None:
            self.scene.clear()
            self.items, self.edges, self.graph, self._drawn_key, self.headings = {}, [], None, None, []
            return
        tokens, source = self.token_counts()
        layer = self.session.selection.layer
        key = (model, id(self.config), tokens, source, layer if self._folds(model) else None)
        if key == self._drawn_key:
            return
        self._drawn_key = key
        graph = model_graph(model, self.config, tokens, source, layer)
        drawn, self.graph = self.graph, graph
        if drawn is not None and self.items and graph.same_drawing(drawn):
            self._restate(graph)                     # a step: the same boxes and lines, new shapes
        else:
            self._draw(graph)

    @staticmethod
    def _folds(model) -> bool:
        return model.n_layers >= FOLD_AT

    def _draw(self, graph: ModelGraph) -> None:
        self.scene.clear()
        self.items = {node.key: NodeItem(node, self.open_node, label_html(node)) for node in graph.nodes}
        places = lay_out(graph, lambda node: self.items[node.key].text_height())
        for key, (x, y, height) in places.items():
            item = self.items[key]
            item.setRect(0, 0, item.rect().width(), height)
            item.setPos(x, y)
            self.scene.addItem(item)
        self.headings = []
        for x, bottom, text in headings(graph, places):
            label = self.scene.addText(text)
            bold = label.font()
            bold.setBold(True)
            label.setFont(bold)
            label.setDefaultTextColor(QColor("#111111"))
            label.setPos(x, bottom - label.boundingRect().height())
            self.headings.append(label)
        font, new_row = edge_font(), self._new_row(graph)
        self.edges = [EdgeItem(edge, edge_path(edge, self.items), font, self.scene, edge_html(edge))
                      for edge in graph.edges]
        for item, edge in zip(self.edges, graph.edges):
            item.show_edge(edge, new_row(edge), edge_html(edge))
        self.scene.setSceneRect(self.scene.itemsBoundingRect().adjusted(-10, -10, 10, 10))
        self._fit()

    def _restate(self, graph: ModelGraph) -> None:
        """The drawn items say what `graph` says (its shapes for the new T, the new row's path), in place."""
        for node in graph.nodes:
            self.items[node.key].show_node(node)
        new_row = self._new_row(graph)
        for item, edge in zip(self.edges, graph.edges):
            item.show_edge(edge, new_row(edge), edge_html(edge))
        bounds = self.scene.itemsBoundingRect().adjusted(-10, -10, 10, 10)
        self.scene.setSceneRect(self.scene.sceneRect().united(bounds))      # a wider shape's label

    def _new_row(self, graph: ModelGraph):
        """Whether an edge carries a decoding step's new row: every stream edge outside the encoder."""
        stepping = self.stepping()
        return lambda edge: stepping and not edge.residual and graph.node(edge.source).stack != "encoder"

    def _fit(self) -> None:
        """Scale the map to fit the view (never up, never below MIN_SCALE), and scroll the selected block into sight."""
        rect = self.scene.sceneRect()
        if rect.height() <= 0 or self.view.height() <= 0:
            return
        viewport = self.view.viewport()
        fits = min((viewport.height() - 4) / rect.height(), (viewport.width() - 4) / max(1.0, rect.width()))
        scale = min(1.0, max(MIN_SCALE, fits))        # below MIN_SCALE the labels are too small: scroll instead
        self.view.resetTransform()
        self.view.scale(scale, scale)
        self._show_selected()

    def _show_selected(self) -> None:
        """Scroll the selected block into sight, the view starting in a gap between columns: scrolled only as far
        as the block needs, it cut the first column mid-word ('ens (ids)', stop 7 of Learn at 1366x768)."""
        selected = [i for i in self.items.values() if self.session.selection.layer in i.node.layers]
        if not selected:
            return
        target = selected[0].sceneBoundingRect()
        self.view.ensureVisible(target, 40, 10)
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        left, boxes = visible.left(), [i.sceneBoundingRect() for i in self.items.values()]
        cut = [box.left() for box in boxes if box.left() < left < box.right()]
        if not cut:
            return
        start = max(min(cut) - GAP_X / 2, self.scene.sceneRect().left())   # the cut column whole, if the block fits
        if target.right() > start + visible.width():
            start = min(box.left() for box in boxes if box.left() >= left) - GAP_X / 2     # else the next column
        if start <= target.left():
            bar = self.view.horizontalScrollBar()
            bar.setValue(bar.value() + round((start - left) * self.view.transform().m11()))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event) -> None:
        """A new font (View ▸ Presentation grows the application's): the boxes laid out again for its text."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and self.graph is not None:
            self._drawn_key, self.items = None, {}          # laid out again: the boxes' heights follow the text
            self.redraw()
            self.show_selection(self.session.selection)         # the new boxes lit as the old ones were

    # ----- selection ---------------------------------------------------------------------------
    def show_selection(self, selection: Selection) -> None:
        if self.graph is None:
            return
        if self._folds(self.session.model) and selection.layer not in self.graph.block_layers(
                "encoder" if selection.attention == "encoder" else "decoder"):
            self._drawn_key = None
            self.redraw()
        for item in self.items.values():
            lit = selection.layer in item.node.layers
            item.light(lit, label_html(item.node, self.head_note(item.node, selection) if lit else ""))
        position = "none" if selection.token is None else str(selection.token)
        stepping = self.stepping()
        self.step_note.set_plain(f"decoding step: the new token's row (position {self.session.trace.n_tokens - 1}) "
                                 "flows along the teal edges; the earlier rows' K and V come from the KV cache"
                                 if stepping else "")
        self.step_note.setVisible(stepping)
        self.readout.setText(f"layer {selection.layer} · head {selection.head} · position {position}")
        self._show_selected()

    def stepping(self) -> bool:
        """Whether the trace shown ends with a decoding step (one new row through every block)."""
        trace = self.session.trace
        return trace is not None and bool(trace.steps) and trace.steps[-1].kind == "decode"

    @staticmethod
    def head_note(node: Node, selection: Selection) -> str:
        """What the selection reads in an attention node: the head, its K/V head, the query row."""
        spec = node.attention
        if spec is None:
            return ""
        note = f"head {selection.head}"
        if spec.kind in ("GQA", "MQA"):
            note += f" reads K/V head {selection.head // spec.group}"
        if selection.token is not None:
            note += f" · row {selection.token} of A"
        return note

    def open_node(self, node: Node) -> None:
        """Select the node's layer (and its attention), and bring forward the dock of the panel showing it."""
        changes = {}
        if node.layers:
            changes["layer"] = node.layers[0]
        if node.attention is not None:
            changes["attention"] = node.attention.role
        elif node.key == "enc.out":
            changes["attention"] = "cross"
        if changes:
            self.session.select(**changes)
        docks = getattr(self.window(), "docks", {})
        dock = docks.get(PANEL_OF.get(node.kind, ""))
        if dock is not None:
            dock.show()
            dock.raise_()

    # ----- export -------------------------------------------------------------------------------
    def make_export_actions(self) -> list[QAction]:
        action = QAction("Export the model map as PNG/SVG…", self)
        action.triggered.connect(self._ask_export)
        copy = QAction("Copy the model map", self)
        copy.triggered.connect(self.copy_to_clipboard)
        return [action, copy]

    def _ask_export(self) -> None:
        path = export_dialogs.ask_path(self, "Export the model map", "model_map.png",
                                       "PNG image (*.png);;SVG image (*.svg)")
        if path is not None:
            export_dialogs.run_reporting(self, lambda: self.save(path))

    def image(self, scale: float = 2.0) -> QImage:
        """The whole map (not only what the view shows) at `scale` pixels per scene unit, on white."""
        rect = self.scene.sceneRect()
        image = QImage(max(1, int(rect.width() * scale)), max(1, int(rect.height() * scale)),
                       QImage.Format.Format_ARGB32)
        image.fill(QColor("white"))
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.scene.render(painter, QRectF(image.rect()), rect)
        painter.end()
        return image

    def save(self, path):
        """The whole map to `path` (.png or .svg), written atomically."""
        path = Path(path)
        if self.graph is None:
            raise export.ExportError(f"Cannot export {path}: no model is open, so there is no map yet.")
        if path.suffix.lower() not in (".png", ".svg"):
            raise export.ExportError(f"Cannot export {path}: the file name must end in .png or .svg.")
        return export.atomic_write(path, self._write_png if path.suffix.lower() == ".png" else self._write_svg)

    def _write_png(self, temporary: str) -> None:
        if not self.image().save(temporary, "PNG"):
            raise OSError("Qt could not encode the PNG")

    def _write_svg(self, temporary: str) -> None:
        from PySide6.QtSvg import QSvgGenerator  # QtSvg loaded only when an SVG is written

        rect = self.scene.sceneRect()
        generator = QSvgGenerator()
        generator.setFileName(temporary)
        generator.setSize(rect.size().toSize())
        generator.setViewBox(QRectF(0, 0, rect.width(), rect.height()))
        generator.setTitle(self.title)
        painter = QPainter(generator)
        self.scene.render(painter, QRectF(0, 0, rect.width(), rect.height()), rect)
        painter.end()

    def copy_to_clipboard(self) -> None:
        if self.graph is not None:
            QGuiApplication.clipboard().setImage(self.image())
