"""Exported figures keep their text and maps inside a small frame: the KV cache animation's title stays
within a 640×480 frame at 1× and 2× text (its drawn text box inside the figure, the frame's edge columns
beside it background), and a layer's nine heads at 640×480 draw maps at least half as tall as wide."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6.QtGui import QImage, QPainter

from explorer.app.figures.kv_animation import kv_cache_figure
from explorer.drawing import export
from explorer.drawing.figures import attention_figure
from explorer.views.maps import short_label
from tests.app.synthetic_trace import build_trace

SIZE = (640, 480)


def named(trace, name: str):
    return dataclasses.replace(trace, model=dataclasses.replace(trace.model, name=name))


def pixels(path) -> np.ndarray:
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8, image.sizeInBytes()).reshape(image.height(), -1)
    return rows[:, : image.width() * 3].reshape(image.height(), image.width(), 3).copy()


@pytest.mark.parametrize("text_scale", [1.0, 2.0])
@pytest.mark.parametrize("name", ["translate-en-zh", "SmolLM2-135M-Instruct.Q4_1"])
def test_the_kv_animations_title_stays_within_a_640x480_frame(qtbot, tmp_path, name, text_scale):
    trace = named(build_trace(n_layers=3, n_heads=4, n_kv_heads=2, prompt_len=4, steps=5), name)
    figure = kv_cache_figure(trace, trace.n_steps - 1, *SIZE, text_scale=text_scale)
    try:
        title = figure.ci.getItem(0, 0)
        box = title.item.mapRectToScene(title.item.boundingRect())
        blocks_title = figure.ci.getItem(1, 2).titleLabel.item.toPlainText()
        frame = pixels(export.save_figure(figure, tmp_path / "frame.png", *SIZE))
    finally:
        figure.close()
    assert box.left() >= 0 and box.right() <= SIZE[0], f"the title {title.text!r} spans {box} in a {SIZE} frame"
    assert "…" not in blocks_title, f"the blocks' title is cut to {blocks_title!r}"
    band = frame[max(0, int(box.top())): int(box.bottom()) + 1]
    background = frame[0, 0]
    for column in (0, 1, SIZE[0] - 2, SIZE[0] - 1):
        assert (band[:, column] == background).all(), f"ink at column {column} beside the title {title.text!r}"


def drawn_labels(axis) -> list[str]:
    """The texts the axis paints, in order along it (pyqtgraph's own draw specs)."""
    image = QImage(4, 4, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    along = (lambda rect: rect.center().x()) if axis.orientation in ("top", "bottom") else (lambda r: r.center().y())
    return [text for rect, _, text in sorted(texts, key=lambda spec: along(spec[0]))]


def test_a_layers_nine_heads_at_640x480_draw_maps_half_as_tall_as_wide_and_name_every_key(qtbot):
    trace = build_trace(n_layers=1, n_heads=9, n_kv_heads=3, prompt_len=11)
    first, last = short_label(trace.token_text[0]), short_label(trace.token_text[-1])
    figure = attention_figure(trace, 0, "all", *SIZE)
    try:
        views = [heatmap.plot.vb for heatmap in figure.heatmaps]
        flat = [(round(v.width()), round(v.height())) for v in views if v.height() < v.width() / 2]
        named_over = {}                                  # a column of tiles (its left edge) -> the keys named over it
        for heatmap, view in zip(figure.heatmaps, views):
            axis = heatmap.axes["top"]
            if axis.isVisible():
                named_over.setdefault(round(view.sceneBoundingRect().left()), []).append(drawn_labels(axis))
        columns = {round(view.sceneBoundingRect().left()) for view in views}
    finally:
        figure.close()
    assert not flat, f"maps (width, height) less than half as tall as wide: {flat}"
    assert set(named_over) == columns, f"columns of tiles with no key named over them: {columns - set(named_over)}"
    for drawn in (labels for column in named_over.values() for labels in column):
        assert drawn and drawn[0] == first, f"the first key {first!r} is not named: {drawn[:2]}"
        assert len(drawn) < trace.n_tokens or drawn[-1] == last, f"the last key {last!r} is not named: {drawn[-2:]}"
