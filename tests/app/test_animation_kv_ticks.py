"""The KV cache animation's layer numbers stay apart at every text size: the labels pyqtgraph draws under the
bars (its own draw specs, the rectangles it paints text into) never touch, for 30 layers at 1× and at 2×
(View ▸ Text size ▸ Largest) and at a large export, and a model with few layers keeps every layer named."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QImage, QPainter

from explorer.app.figures.kv_animation import kv_cache_figure
from tests.app.synthetic_trace import build_trace

GAP_PX = 2            # at least this much space between two labels' ink boxes


def drawn_labels(figure) -> list[tuple[float, float, str]]:
    """(left, right, text) of each layer label the bars' axis paints, left to right."""
    axis = figure.ci.getItem(1, 0).getAxis("bottom")
    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return sorted((rect.left(), rect.right(), text) for rect, _, text in texts)


def figure_of(n_layers: int, size: tuple[int, int], text_scale: float):
    trace = build_trace(n_layers=n_layers, n_heads=4, n_kv_heads=2, prompt_len=4, steps=2)
    return kv_cache_figure(trace, trace.n_steps - 1, *size, text_scale=text_scale)


@pytest.mark.parametrize("size, text_scale", [((720, 360), 1.0), ((720, 360), 2.0), ((1000, 800), 2.0),
                                              ((1920, 1080), 2.0)])
def test_thirty_layers_labels_never_run_together(qtbot, size, text_scale):
    figure = figure_of(30, size, text_scale)
    try:
        labels = drawn_labels(figure)
        width = figure.ci.getItem(1, 0).vb.width()
    finally:
        figure.close()
        figure.deleteLater()
    assert len(labels) >= 3, labels
    for (_, right, text), (left, _, following) in zip(labels, labels[1:]):
        assert left - right >= GAP_PX, f"{text!r} and {following!r} touch: {labels}"
    widest = max(right - left for left, right, _ in labels)
    # thinned to what fits, not beyond: no more than a few labels' widths between neighbours
    assert len(labels) >= width / (6 * (widest + GAP_PX)), (labels, width)


def test_few_layers_keep_every_layer_named(qtbot):
    figure = figure_of(3, (720, 360), 2.0)
    try:
        texts = [text for _, _, text in drawn_labels(figure)]
    finally:
        figure.close()
        figure.deleteLater()
    assert texts == ["0", "1", "2"]
