"""Activation patching's progress words ("9 of 270 sites") are whole in the real window at its launch layout on a
1366x768 screen, with Learn open beside the panels (as on a first start) and without (issue 22: beside the bar, in
the controls' 306 px column, they had 33 px and read "9 o…")."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from tests.app.test_patching_layout import patching_tab

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder


@pytest.mark.parametrize("learn", [True, False], ids=["learn", "no-learn"])
def test_the_progress_words_are_whole_at_1366(qtbot, tmp_path, monkeypatch, learn):
    with patching_tab(qtbot, tmp_path, monkeypatch, "1366x768", learn) as (journey, view):
        for done, total in ((9, 270), (270, 270), (1024, 1024)):        # the longest text: "M of M sites"
            words = f"{done} of {total} sites"                           # as core_api words the map's progress
            view._on_progress(done / total, words)
            QApplication.processEvents()
            label = view.progress_words
            needed = label.fontMetrics().horizontalAdvance(words)
            seen = label.visibleRegion().boundingRect()
            assert label.isVisible() and needed <= label.contentsRect().width() and needed <= seen.width(), \
                f"{words!r} needs {needed} px; its label has {label.contentsRect().width()} ({seen.width()} in sight)"
            assert view.progress.width() >= 60, f"the bar is {view.progress.width()} px"
