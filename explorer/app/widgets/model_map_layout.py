"""Where the model map puts each node: one column per block (read top to bottom), the blocks left to right.

The tokens and embeddings open each row and the final norm, W_U and softmax close it; an
encoder–decoder's encoder runs in a row above its decoder, so that the cross-attention
edges from C come down into each decoder block. Each block's column is headed by its layer
("layer 3", "encoder layer 0"), so a reader finds "the FFN of layer 3" without counting columns.
Qt-free: sizes in scene units.
"""
from __future__ import annotations

from typing import Callable

from explorer.views.model_graph import ModelGraph, Node

NODE_W, GAP_X, GAP_Y, ROW_GAP = 230, 80, 24, 70
HEADING_H = 22                  # the room above a row for its columns' headings


def row_of(node: Node) -> str:
    return "encoder" if node.stack == "encoder" or node.key == "source" else "decoder"


def column_of(node: Node) -> tuple:
    """The column a node stands in: the model's inputs, one block (or fold), or the outputs."""
    if node.layers:
        return ("block", node.layers)
    if node.kind in ("tokens", "embed", "positions"):
        return ("in",)
    return ("out",)


def columns(graph: ModelGraph) -> dict[str, list[tuple[tuple, list[Node]]]]:
    """Per row, its columns in the order their first node appears, each with its nodes in order."""
    rows: dict[str, dict[tuple, list[Node]]] = {}
    for node in graph.nodes:
        rows.setdefault(row_of(node), {}).setdefault(column_of(node), []).append(node)
    return {row: list(cols.items()) for row, cols in rows.items()}


def lay_out(graph: ModelGraph, height_of: Callable[[Node], float] = lambda _node: 30.0
            ) -> dict[str, tuple[float, float, float]]:
    """(x, y, height) of every node's box, in scene units."""
    places: dict[str, tuple[float, float, float]] = {}
    top = HEADING_H
    for row in ("encoder", "decoder"):
        row_columns = columns(graph).get(row, [])
        tallest = 0.0
        for index, (_key, nodes) in enumerate(row_columns):
            y = top
            for node in nodes:
                height = height_of(node)
                places[node.key] = (index * (NODE_W + GAP_X), y, height)
                y += height + GAP_Y
            tallest = max(tallest, y - top)
        if row_columns:
            top += tallest + ROW_GAP + HEADING_H
    return places


def heading(graph: ModelGraph, column: tuple, nodes: list[Node]) -> str:
    """A block column's heading: "layer 3", or "encoder layer 0" / "decoder layer 0" in an encoder–decoder;
    "" for the inputs, the outputs and a fold (whose box names its layers)."""
    if column[0] != "block" or len(column[1]) != 1 or nodes[0].kind == "fold":
        return ""
    both = any(n.stack == "encoder" for n in graph.nodes)
    return (f"{nodes[0].stack} " if both else "") + f"layer {column[1][0]}"


def headings(graph: ModelGraph, places: dict[str, tuple[float, float, float]]) -> list[tuple[float, float, str]]:
    """(x, y of the bottom, text) of every block column's heading, just above its first box."""
    found = []
    for row_columns in columns(graph).values():
        for column, nodes in row_columns:
            text = heading(graph, column, nodes)
            if text:
                x, y, _height = places[nodes[0].key]
                found.append((x, y, text))
    return found
