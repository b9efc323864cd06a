"""Matrix axes label every token they have room for: the key (top) axis as many as the query (left) axis."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QFont, QFontMetricsF, QImage, QPainter

from explorer.drawing.heatmap import Heatmap

LABELS = [f"␣word{i:02d}" for i in range(22)]          # 7 characters each, like '␣capital'


def _shown(qtbot, size=(640, 640)):
    widget = pg.GraphicsLayoutWidget()
    widget.resize(*size)
    qtbot.addWidget(widget)
    heatmap = Heatmap(widget.ci, colorbar=False)
    heatmap.set_matrix(np.eye(len(LABELS)), row_labels=LABELS, col_labels=LABELS)
    widget.show()
    qtbot.waitExposed(widget)
    widget.ci.setGeometry(0, 0, *size)
    qtbot.wait(50)
    return widget, heatmap


def _labelled(axis, length_px: float) -> list[float]:
    levels = axis.tickValues(-0.5, len(LABELS) - 0.5, length_px)
    return levels[0][1] if levels else []


def test_the_key_axis_labels_every_token_the_query_axis_labels(qtbot):
    widget, heatmap = _shown(qtbot)
    view = heatmap.plot.getViewBox().sceneBoundingRect()
    top = _labelled(heatmap.axes["top"], view.width())
    left = _labelled(heatmap.axes["left"], view.height())
    assert len(left) == len(LABELS) and len(top) == len(left)


def test_key_labels_are_drawn_upright_and_whole(qtbot):
    widget, heatmap = _shown(qtbot)
    axis = heatmap.axes["top"]
    image = QImage(int(axis.width()), int(axis.height()), QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = QPainter(image)
    axis.paint(painter, None, None)
    painter.end()
    alpha = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)[..., 3]
    ink_rows = np.flatnonzero((alpha > 0).any(axis=1))
    # Upright text of 7 characters is taller than a line of text (about 13 px) and fits in the axis.
    assert ink_rows.size and ink_rows[-1] - ink_rows[0] > 35
    assert axis.height() >= 6.5 * len(LABELS[0])


def _drawn(axis) -> list[tuple[float, str]]:
    """(position along the axis in px, text) of every label the axis draws."""
    image = QImage(4, 4, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    specs = axis.generateDrawSpecs(painter)
    painter.end()
    horizontal = axis.orientation in ("top", "bottom")
    return sorted((rect.center().x() if horizontal else rect.center().y(), text) for rect, _, text in specs[2])


@pytest.mark.parametrize("n, size", [(17, (700, 640)), (11, (330, 260)), (12, (330, 260)), (17, (400, 400)),
                                     (40, (420, 420))])
def test_every_axis_draws_its_first_and_last_labels_and_none_overlap(qtbot, n, size):
    labels = [f"{i} ␣word" for i in range(n)]
    widget = pg.GraphicsLayoutWidget()
    widget.resize(*size)
    qtbot.addWidget(widget)
    heatmap = Heatmap(widget.ci, colorbar=False, axes=("left", "top"))
    heatmap.set_matrix(np.eye(n), row_labels=labels, col_labels=labels)
    widget.show()
    qtbot.waitExposed(widget)
    widget.ci.setGeometry(0, 0, *size)
    qtbot.wait(50)
    for name in ("left", "top"):
        axis = heatmap.axes[name]
        drawn = _drawn(axis)
        line = QFontMetricsF(axis.style["tickFont"] or QFont()).height()     # an upright label is a line high
        gaps = np.diff([position for position, _ in drawn])
        assert drawn and drawn[0][1] == labels[0], f"{name}: the first label is missing"
        assert drawn[-1][1] == labels[-1], f"{name}: the last label is missing ({drawn[-1][1]!r} is the last drawn)"
        assert gaps.size == 0 or gaps.min() >= line, f"{name}: labels {gaps.min():.1f} px apart overlap"
        if len(drawn) < n:                           # thinned: every k-th label, k the same along the axis
            assert len(set(np.round(gaps[:-1]).astype(int))) <= 2        # (the last key's gap is its own)
        else:
            assert [text for _, text in drawn] == labels, f"{name}: a label is missing"


def test_every_head_of_an_exported_layer_labels_its_first_and_last_key(qtbot):
    from explorer.drawing.figures import attention_figure
    from explorer.views.maps import short_label
    from tests.app.synthetic_trace import build_trace

    trace = build_trace(n_layers=1, n_heads=4, prompt_len=14)
    figure = attention_figure(trace, 0, "all", 1000, 800)
    first, last = short_label(trace.token_text[0]), short_label(trace.token_text[-1])
    for heatmap in figure.heatmaps:
        for name in ("left", "top"):
            drawn = [text for _, text in _drawn(heatmap.axes[name])]
            assert drawn and drawn[0] == first, f"{name}: {drawn[:2]}"
            assert len(drawn) < trace.n_tokens or drawn[-1] == last, f"{name}: {drawn[-2:]}"
    figure.close()



def test_a_step_measures_only_the_new_label_and_the_width_still_fits_the_widest(qtbot, monkeypatch):
    """A decoding step adds one row label to thousands: the side axis measures that one, not all of them again,
    and its width still follows the widest label (a wider label added widens it; a new font measures anew)."""
    import explorer.drawing.heatmap_axes as heatmap_axes
    measured = []

    class CountingMetrics(QFontMetricsF):
        def horizontalAdvance(self, text, *args):
            measured.append(text)
            return super().horizontalAdvance(text, *args)

    monkeypatch.setattr(heatmap_axes, "QFontMetricsF", CountingMetrics)
    axis = heatmap_axes.TokenAxis("left")
    labels = [f"{i} i" for i in range(2000)]
    axis.set_labels(labels)
    before = axis.width()
    measured.clear()
    wide = labels + ["2000 WWWW"]
    axis.set_labels(wide)
    assert len([text for text in measured if text in wide]) <= 4, "every label measured again for one new one"
    assert axis.width() > before                                   # the wider label widened the axis
    expected = QFontMetricsF(axis.style["tickFont"] or QFont()).horizontalAdvance("2000 WWWW")
    assert axis.width() - before >= expected - QFontMetricsF(axis.style["tickFont"] or QFont()).horizontalAdvance(
        "1999 i") - 1
    font = QFont(axis.style["tickFont"] or QFont())
    font.setPointSizeF(font.pointSizeF() * 2)
    measured.clear()
    axis.set_font(font)
    assert len([text for text in measured if text in wide]) >= len(wide)     # a new font: all measured again
