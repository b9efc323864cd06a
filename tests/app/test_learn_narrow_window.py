"""Help ▸ Learn open and the window shrunk to its minimum: every plot in sight stays legible, Learn stays one
click away, and a regrow gives the layout back.

The Learn column kept its width beside the left column and the panels; at the window's minimum (about 880 px
wide) attention had 330 px, and its grid of heads, beside the map, was 2 px wide (7 px on Xvfb).
Expectation: every visible plot at least MIN_PLOT_PX each way (tests/app/screen_fit.py, checked by
Journey.act after every action), on an emulated 1366x768 and 1920x1080 screen; grown back to the screen,
Learn in sight beside attention again, each about as wide as before the shrink.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from explorer.app.window.learn_placement import open_learn
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import in_sight
from tests.app.screen_fit import SCREENS


def beside(left, right) -> bool:
    """Both in sight, `right` wholly to the right of `left` (a column beside it, not a tab over it)."""
    return in_sight(left) and in_sight(right) and right.geometry().left() > left.geometry().right()


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_learn_beside_the_panels_leaves_every_plot_legible_at_the_windows_minimum(qtbot, tmp_path, monkeypatch,
                                                                                  screen_name):
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question:")
        journey.act("Learn opened", lambda: open_learn(window))
        attention = journey.raise_panel("attention")
        learn, attention_dock = window.learn_dock, window.docks["attention"]
        assert beside(attention_dock, learn)
        widths = (attention_dock.width(), learn.width())
        for shrunk in (window.minimumSizeHint(), QSize(window.minimumSizeHint().width(), screen.height())):
            journey.act(f"shrunk to {shrunk.width()}x{shrunk.height()}", lambda shrunk=shrunk: window.resize(shrunk))
            assert attention.grid_view.isVisible() and attention.large_view.isVisible()
            assert not learn.isHidden(), "Learn was closed by the shrink"
            journey.act("Learn raised", learn.raise_)            # one click away: its tab
            assert in_sight(learn) and learn.widget().text.viewport().width() >= 240, learn.geometry().getRect()
            journey.act("attention raised", attention_dock.raise_)
            journey.act("grown back", lambda: window.resize(screen))
            assert beside(attention_dock, learn), "Learn is not a column beside attention once the window is wide"
            now = (attention_dock.width(), learn.width())
            assert all(abs(a - b) <= 0.1 * b for a, b in zip(now, widths)), f"widths {now}, before the shrink {widths}"


@pytest.mark.parametrize("screen_name", list(SCREENS))
def test_learn_opened_on_a_narrow_window_comes_in_front_then_takes_its_column_once_wide(qtbot, tmp_path,
                                                                                       monkeypatch, screen_name):
    screen = SCREENS[screen_name]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        window = journey.window
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question:")
        journey.act("shrunk to the minimum", lambda: window.resize(window.minimumSizeHint()))
        journey.act("Learn opened", lambda: open_learn(window))
        learn, attention_dock = window.learn_dock, window.docks["attention"]
        assert in_sight(learn) and learn.widget().text.viewport().width() >= 240, learn.geometry().getRect()
        journey.act("attention raised", attention_dock.raise_)
        journey.act("Help ▸ Learn again", lambda: open_learn(window))      # the way back to it
        assert in_sight(learn)
        journey.act("grown back", lambda: window.resize(screen))
        assert beside(attention_dock, learn), "Learn is not a column beside attention once the window is wide"


def test_the_windows_least_width_is_the_layouts_and_never_under_the_floor(qtbot, tmp_path, monkeypatch):
    """The least width is what the layout needs (the translator with Learn open: 903 px) and never under the floor
    (760 px, where attention's plots keep 120 px views): a least set on the window replaced the layout's, and the
    window could be made 760 px wide with 903 px of docks in it."""
    from explorer.app.window import dock_layout

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        window = journey.window
        journey.open(BUNDLED / "translate-en-zh", "The cat sat on the mat.")
        journey.act("Learn opened", lambda: open_learn(window))
        needed = window.layout().totalMinimumSize().width()
        assert window.minimumWidth() == needed >= dock_layout.LEAST_WIDTH_PX
        journey.act("shrunk", lambda: window.resize(100, 100))
        assert window.width() >= needed
