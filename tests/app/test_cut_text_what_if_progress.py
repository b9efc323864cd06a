"""KV lab ▸ What-if's progress: the bar's growing chunk covers none of the progress words at any share done, and
the share ("30%") is whole in sight, the stage whole or elided with "…" and whole in the tooltip, in the real window
at its launch layout on a 1366x768 screen, with Learn beside the panels and without (issue 22: the chunk hid the
first digit of the text Fusion centres on the bar, "30%" read "80%")."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication, QLabel

from explorer.app.window.learn_placement import open_learn
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS
from tests.app.test_cut_text_patching_progress import chunk_columns, pixels

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder

STAGE = "mqa: converting layer 2 of 4 (mean-pooling keys)"


def words_in_sight(view, percent: str) -> list[QLabel]:
    """The visible labels whose text starts with `percent` and whose share is drawn whole, in sight."""
    found = []
    for label in view.findChildren(QLabel):
        if label.isVisible() and label.text().startswith(percent):
            needed = label.fontMetrics().horizontalAdvance(percent)
            if needed <= min(label.contentsRect().width(), label.visibleRegion().boundingRect().width()):
                found.append(label)
    return found


@pytest.mark.parametrize("learn", [True, False], ids=["learn", "no-learn"])
def test_the_chunk_covers_no_progress_words_and_the_share_is_whole(qtbot, tmp_path, monkeypatch, learn):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        if learn:
            journey.act("Learn opened, as on a first start", lambda: open_learn(journey.window))
        panel = journey.raise_panel("kv_lab")
        journey.act("the what-if tab", lambda: panel.tabs.setCurrentIndex(1))
        view, bar = panel.what_if, panel.progress
        for percent in (20, 30, 54, 80, 100):
            view.show_progress(percent / 100, STAGE)
            QApplication.processEvents()
            chunk = chunk_columns(bar)
            drawn = pixels(bar)[:, chunk.start: chunk.stop]
            bar.setFormat("")                                    # the same share done, with no words
            QApplication.processEvents()
            bare = pixels(bar)[:, chunk.start: chunk.stop]
            assert np.array_equal(drawn, bare), f"at {percent}% the chunk covers ink of the words"
            view.show_progress(percent / 100, STAGE)
            QApplication.processEvents()
            shown = words_in_sight(view, f"{percent}%")
            assert shown, f"'{percent}%' is not whole in sight"
            label = shown[0]
            whole = f"{percent}% {STAGE}"
            fits = label.fontMetrics().horizontalAdvance(whole) <= label.contentsRect().width()
            wrapped = " ".join(label.shown().split("\n")) == whole if hasattr(label, "shown") else False
            assert label.text() == whole and (fits or wrapped or label.toolTip() == whole), (label.text(),
                                                                                             label.toolTip())
