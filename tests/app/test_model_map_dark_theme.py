"""The model map reads in the dark theme: its boxes keep their fixed light fills and its text is dark (the layer
headings #111, the lines dark grey), so the map is a diagram on paper of its own; drawn on the dark palette's
base, the layer headings and the lines between the boxes were dark on dark.

Judged by the pixels of the view as the person sees it: the WCAG contrast of each heading's glyphs against the
colour behind them (tests/app/text_contrast), at least 4.5 (AA for text).
"""
from __future__ import annotations

from PySide6.QtWidgets import QApplication

from explorer.app.panels.model_map import ModelMapPanel
from explorer.app.state.session import Session
from explorer.app.window.theme import apply_theme
from tests.app.test_model_map import bundled
from tests.app.text_contrast import glyph_contrast, rendered

AA = 4.5


def test_the_map_s_layer_headings_read_in_the_dark_theme(qtbot, tmp_path, restore_palette):
    apply_theme(restore_palette, "dark")
    session = Session()
    panel = ModelMapPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1400, 700)
    panel.show()
    session.set_model(bundled("shakespeare-gqa")[1])
    qtbot.waitUntil(lambda: bool(panel.edges))
    QApplication.processEvents()
    view = panel.view
    view.viewport().grab().save(str(tmp_path / "map.png"))
    image = rendered(tmp_path / "map.png", (0, 0))
    poor = []
    for heading in panel.headings:
        rect = view.mapFromScene(heading.sceneBoundingRect()).boundingRect().adjusted(2, 2, -2, -4)  # not the box
        if view.viewport().rect().contains(rect):
            ratio, count = glyph_contrast(image, [rect.x(), rect.y(), rect.width(), rect.height()])
            if ratio < AA:
                poor.append((heading.toPlainText(), round(ratio, 2), count))
    assert len(panel.headings) >= 4 and not poor, poor
