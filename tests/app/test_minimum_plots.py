"""At the window's least size, Show the work's plots keep legible views or give way, and its text keeps room;
the translator's Tokens texts are whole.

Drive 14 (#7): shrunk to its minimum on a 1366x768 screen, Show the work's map was ~45 px tall and its q·k bar
chart ~60 px. Expectation: the real window on an emulated 1366x768 and 1920x1080 screen, shrunk to its least
size and to its least width at the screen's height; after a cell of the attention map is clicked (Show the work
comes to the front and derives it), every plot a person can see is at least MIN_PLOT_PX each way (Journey.act
checks tests/app/screen_fit.py's fit_problems after every action), the map is still there to click, and the
derivation's text keeps at least 80 px across; grown back to the screen, both plots are shown again.
"""
from __future__ import annotations

import html
import math

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QTextDocument

from explorer.app.panels.base import WrappedText
from explorer.app.panels.tokens import WarningLine
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import in_sight
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPT = "When Mary and John went to the store, John gave a drink to"


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_show_the_work_at_the_windows_least_size(qtbot, tmp_path, monkeypatch, screen_name):
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        least = window.minimumSizeHint()
        for size in (least, QSize(least.width(), screen.height())):
            journey.act(f"shrunk to {size.width()}x{size.height()}", lambda size=size: window.resize(size))
            journey.derive_a_cell()                   # checks every visible plot after the click
            panel = window.docks["derivation"].widget()
            assert in_sight(panel.view), "Show the work gave up its map, the plot a person clicks"
            assert panel.text.width() >= 80, f"the derivation's text is {panel.text.width()} px wide"
            journey.act("derive the block", lambda: panel.what_box.setCurrentIndex(1))
            journey.act("derive the cell", lambda: panel.what_box.setCurrentIndex(0))
        journey.act("grown back", lambda: window.resize(screen))
        journey.derive_a_cell()
        panel = window.docks["derivation"].widget()
        assert in_sight(panel.view) and in_sight(panel.products_view), "grown back, a plot stayed given up"


def whole_height(text: WrappedText) -> int:
    """The height `text`'s HTML takes wrapped at the widget's width (its padding each side), laid out afresh."""
    document = QTextDocument()
    document.setDocumentMargin(0)
    document.setDefaultFont(text.document.defaultFont())
    document.setHtml(text.text() if not isinstance(text, WarningLine) else html.escape(text.text(), quote=False))
    document.setTextWidth(text.width() - 2 * text.PADDING[0])
    return math.ceil(document.size().height()) + 2 * text.PADDING[1]


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_the_translators_tokens_are_whole_at_the_windows_least_size(qtbot, tmp_path, monkeypatch, screen_name):
    """Drive 14 (#7): at the translator's least size the Tokens header and the "Left out by the tokenizer" warning
    were cut mid-sentence. Expectation: the window fits the screen (Journey.act), and every text Tokens shows is
    as tall as its text wrapped at its width."""
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "translate-en-zh", "When Mary and John went to the store, John gave a drink to")
        panel = window.docks["tokens"].widget()
        assert panel.dropped.isVisible(), "the prompt has no character the translator leaves out"
        least = window.minimumSizeHint()
        for size in (least, QSize(least.width(), screen.height())):
            journey.act(f"shrunk to {size.width()}x{size.height()}", lambda size=size: window.resize(size))
            journey.act("attention raised", lambda: journey.raise_panel("attention"))
            texts = [text for text in panel.findChildren(WrappedText) if text.isVisible() and text.text()]
            assert len(texts) >= 3, [text.text()[:40] for text in texts]
            cut = {text.text()[:60]: (text.height(), whole_height(text)) for text in texts
                   if text.height() < whole_height(text)}
            assert not cut, f"at {window.width()}x{window.height()} these texts are cut (height, whole): {cut}"


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_kv_cache_and_why_this_token_at_the_windows_least_size(qtbot, tmp_path, monkeypatch, screen_name):
    """Issue 22: at the window's least size on a 1366x768 screen (800 x 653) the KV cache's occupancy plots were
    61 px tall and Why this token's plots 54 px. Expectation: raised there and at the least width at the screen's
    height, each panel's plots a person sees keep MIN_PLOT_PX views each way (Journey.act checks every visible
    plot), the KV cache keeps its per-layer plot and Why this token its heads' map, the plots a person clicks,
    at least in reach (in sight, or in a scroll area), and Why this token still draws its attribution."""
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", PROMPT)
        least = window.minimumSizeHint()
        for size in (least, QSize(least.width(), screen.height())):
            journey.act(f"shrunk to {size.width()}x{size.height()}", lambda size=size: window.resize(size))
            kv = journey.raise_panel("kv_cache")
            journey.act("KV cache raised", lambda: None)
            assert kv.plots.layer_plot is not None and kv.plots.layer_plot.isVisible(), \
                "the KV cache gave up its per-layer plot"
            why = journey.raise_panel("attribution")
            journey.act("Why this token raised", lambda: None)
            journey.act("attribution of another token", lambda: why.token_box.setCurrentIndex(1))
            assert why.result is not None and why.heads.plot.isVisible(), "Why this token shows no heads' map"
            assert why.answered[3] == why._tokens[1], "Why this token did not attribute the token chosen"
        journey.act("grown back", lambda: window.resize(screen))
        journey.raise_panel("kv_cache")
        journey.act("KV cache raised", lambda: None)
        kv = window.docks["kv_cache"].widget()
        assert kv.plots.total_plot.isVisible() and in_sight(kv.plots), "grown back, the KV cache's plots are hidden"
