"""The model map's scene items: a node's box with its label, and an edge's line with its live shape.

Built once per drawing (a model, its config, a fold); a decoding step only changes what the items say
(`NodeItem.show_node`, `EdgeItem.show_edge`: the shapes for the new T, the new row's colour) and where the
selection is lit (`NodeItem.light`), never where they stand, so stepping rebuilds nothing. What the labels
read comes as rich text from the panel (its formula notation); an item sets it again only when it changed.
"""
from __future__ import annotations

import re
from typing import Callable

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem, QGraphicsScene, QGraphicsTextItem

from explorer.app.widgets.model_map_layout import GAP_X, NODE_W
from explorer.views.model_graph import Edge, Node

FILL = {"attention": "#dbe8fb", "w_o": "#dbe8fb", "ffn": "#e3f4df", "moe": "#d5efcc", "norm": "#f3ece0",
        "final_norm": "#f3ece0", "add": "#f2f2f2", "fold": "#ececf6", "tokens": "#fff4cc", "embed": "#fff4cc",
        "positions": "#fff4cc", "unembed": "#fde3e3", "softmax": "#fde3e3", "output": "#eeeeee"}
ACCENT = QColor("#d9480f")
NEW_ROW = QColor("#0c8599")        # the path of a decoding step's new row
# which panel shows a node's piece (object names of the window's docks), and the attention it selects
PANEL_OF = {"tokens": "tokens", "embed": "embeddings", "positions": "embeddings", "attention": "attention",
            "w_o": "qkv", "norm": "residual", "add": "residual", "ffn": "residual", "moe": "residual",
            "final_norm": "next_token", "unembed": "next_token", "softmax": "next_token", "output": "attention"}


_NAME = re.compile(r"([_^])([A-Za-z]{2,})")


def braced(text: str) -> str:
    """'N_KV' -> 'N_{KV}': the whole name as the subscript (formula_html scripts one character unless braced)."""
    return _NAME.sub(r"\1{\2}", text)


def edge_font() -> QFont:
    """The edges' shape labels: four fifths of the application's font, so they grow with it (Presentation)."""
    font = QFont()
    if font.pointSizeF() > 0:
        font.setPointSizeF(font.pointSizeF() * 0.8)
    else:
        font.setPixelSize(max(8, round(font.pixelSize() * 0.8)))
    return font


class NodeItem(QGraphicsRectItem):
    """One node's box; a click calls `on_click(node)` (the panel selects its layer and opens its panel)."""

    def __init__(self, node: Node, on_click: Callable[[Node], None], html: str) -> None:
        super().__init__(0, 0, NODE_W, 30)
        self.on_click = on_click
        self.setBrush(QBrush(QColor(FILL.get(node.kind, "#ffffff"))))
        self.setPen(QPen(QColor("#555555"), 1))
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.text = QGraphicsTextItem(self)
        self.text.setTextWidth(NODE_W - 8)
        self.text.setPos(4, 2)
        self.text.setDefaultTextColor(QColor("#111111"))
        self.html, self.lit = "", None
        self.show_node(node)
        self.light(False, html)

    def show_node(self, node: Node) -> None:
        """The node this box stands for now: the same box, its inner shapes (the tooltip) for the new T."""
        self.node = node
        panel = PANEL_OF.get(node.kind)
        where = "click: fold open" if node.kind == "fold" else f"click: open {panel}" if panel else ""
        self.setToolTip("\n".join(t for t in (node.label, node.detail, where) if t))

    def light(self, lit: bool, html: str) -> None:
        """Outlined in the accent colour when the selection is in it, its label `html` (with the selection's note
        where lit); the text set again only when it changes (laying out rich text is the costly part of a step)."""
        if lit != self.lit:
            self.lit = lit
            self.setPen(QPen(ACCENT if lit else QColor("#555555"), 2.5 if lit else 1))
        if html != self.html:
            self.html = html
            self.text.setHtml(html)

    def text_height(self) -> float:
        """The box's height: its text's (the longest labels wrap to two lines), one line of room for a note."""
        return self.text.boundingRect().height() + 4 + (16 if self.node.attention is not None else 0)

    def mousePressEvent(self, event) -> None:
        self.on_click(self.node)
        event.accept()


def column_top(items: dict[str, NodeItem], item: NodeItem):
    """The first box of `item`'s column (where the block's stream enters)."""
    return min((i.sceneBoundingRect() for i in items.values()
                if abs(i.sceneBoundingRect().left() - item.sceneBoundingRect().left()) < 1),
               key=lambda rect: rect.top())


def edge_path(edge: Edge, items: dict[str, NodeItem]) -> QPainterPath:
    """The line between two placed boxes: down a column or across to the next; the skip path a curve down the
    block's right side."""
    target = items[edge.target]
    a, b = items[edge.source].sceneBoundingRect(), target.sceneBoundingRect()
    path = QPainterPath()
    if edge.residual:
        top = a if abs(a.left() - b.left()) < 1 else column_top(items, target)
        start, end = QPointF(top.right(), top.center().y()), QPointF(b.right(), b.center().y())
        bend = b.right() + GAP_X * 0.3
        path.moveTo(start)
        path.cubicTo(bend, start.y(), bend, end.y(), end.x(), end.y())
        return path
    below = b.top() >= a.bottom() - 1 and abs(a.center().x() - b.center().x()) < 1
    path.moveTo(QPointF(a.center().x(), a.bottom()) if below else QPointF(a.right(), a.center().y()))
    path.lineTo(QPointF(b.center().x(), b.top()) if below else QPointF(b.left(), b.center().y()))
    return path


class EdgeLabel(QGraphicsTextItem):
    """An edge's shape, on a patch of the map's white: a line that runs under it (the steep one from a block's
    last add up to the next block's first norm, 80 units across) is hidden there instead of striking the text
    through."""

    def paint(self, painter, option, widget=None) -> None:
        painter.fillRect(self.boundingRect(), QColor(255, 255, 255, 235))
        super().paint(painter, option, widget)


class EdgeItem(QGraphicsPathItem):
    """One edge's line, behind the boxes, and (the residual skip path aside) its live shape in a label of its
    own in the scene, beside a vertical line and centred on a slanting one, over it."""

    def __init__(self, edge: Edge, path: QPainterPath, font: QFont, scene: QGraphicsScene, html: str) -> None:
        super().__init__(path)
        self.setZValue(-1)
        scene.addItem(self)
        self.label = None
        if not edge.residual:
            self.label = EdgeLabel()
            self.label.setFont(font)
            self.label.setDefaultTextColor(QColor("#1f4e9c"))
            scene.addItem(self.label)
        self.html = None
        self.show_edge(edge, False, html)

    def show_edge(self, edge: Edge, new_row: bool, html: str) -> None:
        """The edge's shape for the present T (`html`), in the new row's colour on a decoding step; the line
        stays put."""
        self.edge = edge
        self.setToolTip(edge.label)
        if self.label is None:
            self.setPen(QPen(QColor("#8a8a8a"), 1, Qt.PenStyle.DashLine))
            return
        self.setPen(QPen(NEW_ROW, 2.2) if new_row else QPen(QColor("#333333"), 1.2))
        if html == self.html:
            return
        self.html = html
        self.label.setHtml(html)
        path = self.path()
        middle, size = path.pointAtPercent(0.5), self.label.boundingRect()
        if abs(path.pointAtPercent(0).x() - path.pointAtPercent(1).x()) < 1:
            self.label.setPos(middle.x() + 2, middle.y() - size.height() / 2)
        else:
            self.label.setPos(middle.x() - size.width() / 2, middle.y() - size.height() / 2)
