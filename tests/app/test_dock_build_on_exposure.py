"""Help ▸ Learn tabifies the bottom tabs again beside its column, which brings each tab in front in turn: a
panel behind a tab is built, and asks the model its first question, only once its tab is raised by the
person, never by that relayout (it built every tabbed panel at once, each starting a model job)."""
from __future__ import annotations

import pytest

from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.shared_window import settle, window_with_tiny_model


@pytest.fixture(scope="module", params=list(SCREENS), ids=list(SCREENS))
def window(qapp, tmp_path_factory, request):
    """At 1920x1080 the bottom tabs stand under attention and Learn tabifies them again beside its column; at
    1366x768 they are already tabbed behind attention."""
    with emulated_screen(SCREENS[request.param]), \
            window_with_tiny_model(qapp, tmp_path_factory.mktemp("app"), {}) as window:
        yield window


def out_of_sight(window, name: str) -> bool:
    """Whether the dock lies wholly outside the window, where Qt moves a tab behind another."""
    return not window.rect().intersects(window.docks[name].geometry())


def help_learn(window) -> None:
    """Help ▸ Learn, as the person chooses it."""
    action = next(a for a in window.menus.help.actions() if a.text().replace("&", "").startswith("Learn"))
    action.trigger()


def wait_events(qapp, rounds: int = 50) -> None:
    for _ in range(rounds):
        qapp.processEvents()


def test_opening_learn_builds_no_tab_behind_another_and_asks_the_model_nothing(qapp, window):
    jobs = []
    window.session.requests.model_job_requested.connect(jobs.append)
    lazy = [name for name, dock in window.docks.items() if not dock.built]
    assert {"residual", "atlas", "attribution", "experiments"} <= set(lazy), lazy

    help_learn(window)
    settle(qapp, lambda: window.learn_dock.isVisible() and not window.learn_dock.visibleRegion().isEmpty())
    wait_events(qapp)
    behind = [name for name in lazy if out_of_sight(window, name)]
    assert behind == lazy, "opening Learn raised a tab: the check below would not be about hidden tabs"
    assert [name for name in lazy if window.docks[name].built] == []
    assert jobs == [], "a panel behind a tab started a model job"

    dock = window.docks["residual"]
    dock.raise_()
    settle(qapp, lambda: dock.built and not out_of_sight(window, "residual") and dock.widget().is_shown())
    settle(qapp, lambda: len(jobs) > 0)               # the residual stream is read from the model
    wait_events(qapp)
    assert [name for name in lazy if name != "residual" and window.docks[name].built] == []
