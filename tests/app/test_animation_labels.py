"""What an animation's menu item and picture say: the Attention and KV cache panels' animation items name
every format their file dialog offers, and the KV animation's three plot titles are drawn whole at any
export size and text size (the blocks' title was cut to "b…" beside the two longer ones).

The expectations are the filters the dialog is really given and the titles' own text, not a label copied
from the panels.
"""
from __future__ import annotations

import re

import pytest

from explorer.app.figures import export_dialogs
from explorer.app.figures.kv_animation import kv_cache_figure
from tests.app.synthetic_trace import build_trace

BLOCK = 16


def offered_formats(window, monkeypatch, dock: str) -> tuple[list[str], list[str]]:
    """(the formats the panel's animation item names, the suffixes its save dialog offers)."""
    asked = []
    monkeypatch.setattr(export_dialogs, "ask_path", lambda parent, title, name, filters: asked.append(filters))
    panel = window.docks[dock].widget()
    action = next(a for a in panel.make_export_actions() if "animation" in a.text())
    action.trigger()
    assert asked, f"the {dock} panel's animation item opened no save dialog"
    named = re.search(r"\(([^)]*)\)", action.text()).group(1).split("/")
    offered = re.findall(r"\*\.(\w+)", asked[0])
    return named, offered


@pytest.mark.parametrize("dock", ["attention", "kv_cache"])
def test_the_animation_item_names_what_its_dialog_offers(projector_window, monkeypatch, dock):
    named, offered = offered_formats(projector_window, monkeypatch, dock)
    assert named == [suffix.upper() for suffix in offered]


@pytest.mark.parametrize(("size", "text_scale"), [((1000, 800), 2.0), ((720, 360), 1.4), ((640, 480), 1.0),
                                                  ((1000, 800), 1.0)])
def test_every_kv_animation_title_is_whole(qtbot, size, text_scale):
    trace = build_trace(n_layers=30, n_heads=9, n_kv_heads=3, prompt_len=12, steps=4)
    figure = kv_cache_figure(trace, 2, *size, text_scale=text_scale, block_size=BLOCK)
    try:
        plots = [figure.ci.getItem(1, column) for column in range(3)]
        shown = [" ".join(plot.titleLabel.item.toPlainText().split()) for plot in plots]
        assert not any("…" in text for text in shown), shown
        assert shown[2] == f"blocks ({BLOCK})"
        for plot in plots:
            assert plot.mapRectToScene(plot.boundingRect()).right() <= size[0] + 1, "a plot runs off the figure"
    finally:
        figure.close()
        figure.deleteLater()
