"""Every plot a person can see keeps MIN_PLOT_PX each way at every size the window can be given, and the Tokens
table shows a useful number of rows in the default layout (issue 22).

Seen on a bare X screen: a window laid out at 1920x1080 and shrunk to 800 x 600 left the attention map 4 px
tall and the embeddings' plots about 20 (Qt takes a shrink off every dock alike); at 1366x768 the Tokens
table beside Next token showed two rows. Journey.act checks every visible plot's size and that the window
fits the screen after each action (tests/app/screen_fit.py).
"""
from __future__ import annotations

import pytest

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

ROWS_WANTED = 6          # a short prompt read without scrolling


def rows_in_sight(window) -> float:
    table = window.docks["tokens"].widget().table
    return table.viewport().height() / table.rowHeight(0)


def reset_layout(window) -> None:
    next(a for a in window.menus.view.actions() if a.text().replace("&", "") == "Reset Layout").trigger()


def test_plots_stay_legible_shrunk_from_1920x1080_to_800x600_and_grown_back(qtbot, tmp_path, monkeypatch):
    screen = SCREENS["1920x1080"]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question")
        laid_out = window.size()
        for width, height in ((1400, 900), (1200, 760), (800, 600), (1000, 700)):
            journey.act(f"shrunk to {width} x {height}", lambda w=width, h=height: window.resize(w, h))
            assert window.height() <= max(height, window.minimumSize().height())
        journey.act("grown back", lambda: window.resize(laid_out))
        assert window.docks["embeddings"].isVisible() and not window.docks["embeddings"].visibleRegion().isEmpty(), \
            "grown back to the screen, the bottom tabs are no longer beside attention"
        journey.act("shrunk again", lambda: window.resize(800, 600))
        journey.act("Reset Layout", lambda: reset_layout(window))
        assert window.size() == laid_out


def test_a_regrow_to_another_size_goes_to_the_panels_not_to_the_prompt(qtbot, tmp_path, monkeypatch):
    """Shrunk to 800 x 600 and grown to 1300 x 800 (not the size it was laid out at, whose layout is given back
    whole), Qt handed the growth to the prompt: 270 px tall for three lines, the attention map under it as small
    as at 800 x 600."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1920x1080"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question")
        laid_out = window.docks["prompt"].height()
        journey.act("shrunk to 800 x 600", lambda: window.resize(800, 600))
        journey.act("grown to 1300 x 800", lambda: window.resize(1300, 800))
        assert window.docks["prompt"].height() <= laid_out + 8, \
            f"the prompt is {window.docks['prompt'].height()} px tall, {laid_out} as laid out"


def test_the_tokens_table_shows_six_rows_beside_next_token_at_1366x768(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question")
        assert rows_in_sight(window) >= ROWS_WANTED, f"the token table shows {rows_in_sight(window):.1f} rows"
        panel = journey.raise_panel("next_token")
        journey.act("logit lens", panel.lens_button.click)
        assert panel.lens_table.isVisibleTo(panel)
        assert rows_in_sight(window) >= ROWS_WANTED, \
            f"beside the logit lens, the token table shows {rows_in_sight(window):.1f} rows"
        journey.act("Reset Layout", lambda: reset_layout(window))
        assert rows_in_sight(window) >= ROWS_WANTED, \
            f"after Reset Layout, the token table shows {rows_in_sight(window):.1f} rows"
