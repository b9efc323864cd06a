"""What the screenshots showed, checked in pixels: a highlighted row and a formula readable in either
theme (contrast measured over the glyphs, not one pixel), mask rows tall enough to tell apart, a
paged grid that shows every layer with its legend, and one way of counting steps everywhere."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage, QPalette

from explorer.app.panels import NextTokenPanel
from explorer.app.state.session import Session
from explorer.app.window.theme import apply_theme
from tests.app.synthetic_trace import WORDS, build_trace
from tests.app.text_contrast import glyph_contrast


def luminance(colour: QColor) -> float:
    """WCAG relative luminance."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def over(top: QColor, base: QColor) -> QColor:
    alpha = top.alphaF()
    return QColor.fromRgbF(*(alpha * t + (1 - alpha) * b for t, b in
                             ((top.redF(), base.redF()), (top.greenF(), base.greenF()), (top.blueF(), base.blueF()))))




@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_chosen_candidate_row_is_readable(qtbot, restore_palette, theme):
    apply_theme(restore_palette, theme)
    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    panel = NextTokenPanel(session)
    qtbot.addWidget(panel)
    panel.show()
    session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=1))
    row = panel.chosen_rank - 1
    assert row >= 0
    item = panel.table.item(row, 1)
    palette = panel.table.palette()
    background = over(item.background().color(), palette.color(QPalette.ColorRole.Base))
    assert contrast(background, palette.color(QPalette.ColorRole.Text)) >= 4.5
    assert item.background().color() != palette.color(QPalette.ColorRole.Base), "the chosen row is marked"


def grabbed(widget) -> np.ndarray:
    """(H, W, 3) uint8 of what the widget paints."""
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    width, height = image.width(), image.height()
    data = np.frombuffer(image.constBits(), np.uint8, count=image.bytesPerLine() * height)
    return data.reshape(height, image.bytesPerLine())[:, : 3 * width].reshape(height, width, 3).copy()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_formula_header_is_drawn_in_the_theme_text_colour(qtbot, restore_palette, theme):
    apply_theme(restore_palette, theme)
    session = Session()
    panel = NextTokenPanel(session)
    qtbot.addWidget(panel)
    panel.resize(600, 300)
    panel.show()
    session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=1))
    qtbot.wait(50)
    image = grabbed(panel.header)
    ratio, glyph_pixels = glyph_contrast(image, [0, 0, image.shape[1], image.shape[0]])
    assert glyph_pixels > 100, "the formula is drawn"
    assert ratio >= 4.5, f"the formula's glyphs have {ratio:.2f}:1 contrast on the panel's background"


def row_px(heatmap) -> float:
    """How many pixels one matrix row takes on screen."""
    box = heatmap.plot.getViewBox()
    top, bottom = box.mapViewToScene(QPointF(0, 0)), box.mapViewToScene(QPointF(0, 1))
    return abs(bottom.y() - top.y())


def test_mask_rows_are_tall_enough_to_tell_apart_in_a_short_dock(qtbot):
    from explorer.app.panels import MaskPanel

    session = Session()
    panel = MaskPanel(session)
    qtbot.addWidget(panel)
    panel.resize(900, 260)                     # a bottom dock on a small screen
    panel.show()
    session.set_trace(build_trace(n_layers=30, prompt_len=8, steps=3))
    qtbot.wait(100)
    box = panel.heatmap.plot.getViewBox().sceneBoundingRect()
    assert box.height() >= 120, f"the mask has {box.height():.0f} px"
    assert row_px(panel.heatmap) >= 10, "each of the 11 rows at least 10 px"


def test_the_paged_grid_shows_every_layer_and_has_a_legend(qtbot):
    from explorer.app.panels import KVCachePanel

    session = Session()
    panel = KVCachePanel(session)
    qtbot.addWidget(panel)
    panel.resize(1000, 420)
    panel.show()
    session.set_trace(build_trace(n_layers=30, n_heads=9, n_kv_heads=3, prompt_len=8, steps=3))
    qtbot.wait(100)
    blocks = panel.blocks
    top, bottom = blocks.plot.getViewBox().viewRange()[1]
    assert top <= 0 and bottom >= 29, "rows of all 30 layers are in view"
    axis = blocks.axes["left"]
    ticks = [value for _, values in axis.tickValues(top, bottom, axis.height()) for value in values]
    labels = axis.tickStrings(ticks, 1, 1)
    assert "L0" in labels and len(labels) >= 5 and any(label in labels for label in ("L25", "L28", "L29")), labels
    assert blocks.colorbar is not None and blocks.colorbar.isVisible(), "the colour bar is the fill legend"
    assert tuple(blocks.colorbar.levels()) == (0.0, 1.0)
    assert "share" in panel.block_legend.text() and panel.block_legend.isVisible()


def test_the_status_bar_the_kv_cache_and_the_mask_count_steps_alike(qtbot):
    import re

    from explorer.app.panels import KVCachePanel, MaskPanel
    from explorer.app.window.status_bar import StatusLine

    session = Session()
    kv, mask, status = KVCachePanel(session), MaskPanel(session), StatusLine()
    for widget in (kv, mask, status):
        qtbot.addWidget(widget)
        widget.show()
    for steps in (0, 20):
        trace = build_trace(n_layers=2, prompt_len=5, steps=steps)
        session.set_trace(trace)
        status.show_trace(trace)
        said = {name: int(re.search(r"step (\d+)", text).group(1)) for name, text in
                (("status", status.fields["step"].text()), ("kv", kv.summary.text()),
                 ("mask", mask.step_label.text()))}
        assert set(said.values()) == {steps}, said       # step 0 is the prefill, step n the n-th token
