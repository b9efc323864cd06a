"""KV lab ▸ What-if's progress bar is legible in the real window at its launch layout on a 1366x768 screen, beside
Learn (as on a first start) and without, for the bundled model and SmolLM2: the bar at least 12 average characters
of its font wide and its words on one line, whole where they fit and else cut after a whole word with "…" (the
whole in the tooltip). Beside the controls the bar had ~45 px and "21% replicating…" wrapped to two lines (issue 22)."""
from __future__ import annotations

import pytest

from explorer.app.window.learn_placement import open_learn
from explorer.core import store
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS, settle

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder

SMOLLM2 = store.pulled_path("smollm2-135m")          # looked up before a test's empty store
LONG = "mqa: converting layer 2 of 4 (mean-pooling keys) and decoding both models step by step to the end"


def check_words(words, whole: str) -> None:
    shown, metrics = words.shown(), words.fontMetrics()
    assert "\n" not in shown and words.height() < 2 * metrics.lineSpacing(), (shown, words.height())
    assert metrics.horizontalAdvance(shown) <= words.contentsRect().width(), (shown, words.contentsRect().width())
    if shown != whole:
        kept = shown.removesuffix("…").split()
        assert shown.endswith("…") and kept == whole.split()[:len(kept)] and words.toolTip() == whole, shown


@pytest.mark.parametrize("model", ["shakespeare-gqa", "smollm2-135m"])
@pytest.mark.parametrize("learn", [True, False], ids=["learn", "no-learn"])
def test_the_what_if_bar_is_legible_and_its_words_on_one_line_at_1366(qtbot, tmp_path, monkeypatch, model, learn):
    folder = BUNDLED / model if model.startswith("shakespeare") else SMOLLM2
    if folder is None:
        pytest.skip(f"{model} is not pulled")
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(folder, "The capital of France is")
        # waited for, not checked (journey.act): the checks of other panels are their tests'
        if learn:
            open_learn(journey.window)                      # as on a first start
        panel = journey.raise_panel("kv_lab")
        panel.tabs.setCurrentIndex(1)
        journey.idle("the what-if tab")
        view = panel.what_if
        for fraction, stage in ((0.21, "replicating…"), (0.54, LONG)):
            view.show_progress(fraction, stage)
            settle(0.1)
            bar, words = view.progress, view.progress.words
            legible = 12 * bar.fontMetrics().averageCharWidth()
            assert bar.isVisible() and bar.width() >= legible, f"the bar is {bar.width()} px, under {legible}"
            check_words(words, f"{round(100 * fraction)}% {stage}")
        assert words.shown() != f"54% {LONG}" or words.toolTip() == ""
        view.show_progress(0.21, "replicating…")
        settle(0.1)
        assert view.progress.words.shown() == "21% replicating…", view.progress.words.shown()
