"""View ▸ Theme at run time: a plot's text follows the theme, as a launch in that theme draws it. Axes and titles fix
their colour when made, so a switch to Dark left the axis names, the token labels and the titles black on the dark
plots, and Learn's links pure blue on the near-black page (drive27).

Judged by pixels: the WCAG contrast of each title's and axis's glyphs against the plot behind them, in a heat map made
in the light theme and then switched to dark and back (tests/app/text_contrast), at least 4.5 (AA for text); and the
colour of Learn's links against the page's base colour.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QWidget

from explorer.app.panels.learn import LearnPanel
from explorer.app.state.session import Session
from explorer.app.window.theme import apply_theme
from explorer.drawing.heatmap import Heatmap
from tests.app.text_contrast import contrast, glyph_contrast, label_rects, rendered

AA = 4.5


def poor_text(view: pg.GraphicsView, path) -> list:
    """The pieces of text of the view whose glyphs read below AA against what is behind them."""
    QApplication.processEvents()
    view.grab().save(str(path))
    image = rendered(path, (0, 0))
    rects = label_rects(view)
    plots = [rect for what, rect in rects if what == "plot"]
    poor = []
    for what, rect in rects:
        if what != "plot":
            ratio, count = glyph_contrast(image, rect, plots)
            if count and ratio < AA:
                poor.append((what, round(ratio, 2)))
    return poor


def test_a_heat_maps_titles_and_axes_follow_a_theme_chosen_at_run_time(qtbot, tmp_path, restore_palette):
    app = restore_palette
    apply_theme(app, "light")
    root = QWidget()
    qtbot.addWidget(root)
    view = pg.GraphicsLayoutWidget(root)
    view.resize(520, 440)
    heatmap = Heatmap(view.ci)
    labels = ["The", " cat", " sat", " on", " the", " mat"]
    heatmap.set_matrix(np.tril(np.full((6, 6), 0.3, np.float32)), row_labels=labels, col_labels=labels)
    heatmap.plot.setTitle("Attention L0.H0")
    heatmap.plot.setLabel("left", "query")
    heatmap.plot.setLabel("top", "key")
    root.show()
    assert not poor_text(view, tmp_path / "light.png")
    for theme in ("dark", "light", "dark"):
        apply_theme(app, theme, root)
        poor = poor_text(view, tmp_path / f"{theme}.png")
        assert len(label_rects(view)) >= 4 and not poor, f"after Theme ▸ {theme}: {poor}"


def anchor_colours(browser) -> list[QColor]:
    """The foreground of every link in a text view's document."""
    colours, block = [], browser.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().isAnchor():
                colours.append(fragment.charFormat().foreground().color())
            it += 1
        block = block.next()
    return colours


def test_learns_links_follow_a_theme_chosen_at_run_time(qtbot, restore_palette):
    app = restore_palette
    apply_theme(app, "light")
    panel = LearnPanel(Session())
    qtbot.addWidget(panel)
    panel.show()
    for index in range(len(panel.stops)):             # a stop with a question that has an answer: a link
        panel.go_to(index)
        if anchor_colours(panel.text):
            break
    assert anchor_colours(panel.text), "no stop's page has a link"
    def ratios() -> list[float]:
        base = panel.text.palette().base().color()
        return [float(contrast(np.array(c.getRgb()[:3], np.uint8), np.array(base.getRgb()[:3], np.uint8)))
                for c in anchor_colours(panel.text)]

    for theme in ("dark", "light"):
        apply_theme(app, theme, panel)
        try:                                  # the page is drawn again in a turn of its own (a loaded machine: later)
            qtbot.waitUntil(lambda: ratios() and min(ratios()) >= AA, timeout=5000)
        except Exception:
            pass
        assert ratios() and min(ratios()) >= AA, f"Learn's links after Theme ▸ {theme}: contrast {ratios()}"
