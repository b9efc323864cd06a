"""While the before → after of an ablation waits on the model thread (Alt-click while the head atlas scores, issue
22), the Next token panel says it waits and its candidates keep the rows they showed before: the waiting line took
them, and at 1366x768 the table was left with 2 to 4 rows in sight."""
from __future__ import annotations

import pytest

from explorer.app.thread.requests import HeadScoresJob
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS, fit_problems
from tests.app.test_replay_waits_behind_job import HeldJob, _start

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder
ABLATE = Intervention(ablations=(HeadAblation(0, 1),))
ATLAS = HeadScoresJob.what


class _Executor:
    """Hands a job to the model thread as a panel does (session.requests.model_job_requested)."""

    def __init__(self, requests) -> None:
        self.run_job = requests.model_job_requested.emit


def rows_in_sight(table) -> list[int]:
    """The rows drawn whole inside the table's viewport, by their rectangles."""
    height = table.viewport().height()
    return [row for row in range(table.rowCount()) if table.rowViewportPosition(row) >= 0
            and table.rowViewportPosition(row) + table.rowHeight(row) <= height]


def _atlas(requests, answer: str) -> tuple[HeldJob, object]:
    job = HeldJob(lambda loaded, progress, cancel: answer)    # the head atlas's scoring, held until released
    job.what = ATLAS
    return job, _start(job, _Executor(requests))


@pytest.mark.parametrize("screen", ["1366x768", "1920x1080"])
def test_the_candidates_keep_their_rows_while_the_comparison_waits(qtbot, tmp_path, monkeypatch, screen):
    size = SCREENS[screen]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, size) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        window = journey.window
        journey.raise_panel("experiments")
        panel = journey.raise_panel("next_token")
        journey.idle("the panels drawn")
        qtbot.wait(300)
        before = rows_in_sight(panel.table)
        assert len(before) >= 3 and not panel.compare_label.isVisible()

        first, _first_call = _atlas(window.session.requests, "first")
        qtbot.waitUntil(first.started.is_set, timeout=10000)
        window.session.add_experiment(ABLATE)             # Alt-click: its replay, then the before → after
        second, _second_call = _atlas(window.session.requests, "second")   # the atlas asked again meanwhile
        first.release.set()
        try:
            qtbot.waitUntil(lambda: window.session.trace_intervention == ABLATE, timeout=30000)
            try:
                qtbot.waitUntil(lambda: f"waiting for {ATLAS}" in panel.compare_label.text(), timeout=15000)
            except qtbot.TimeoutError:
                raise AssertionError(f"{panel.compare_label.text()!r} {window.worker._queue.jobs()} "
                                     f"{window.worker._queue.pending()}") from None
            assert panel.compare_label.isVisible()
            try:                                            # the layout settles, in turns of the event loop
                qtbot.waitUntil(lambda: len(rows_in_sight(panel.table)) == len(before), timeout=3000)
            except qtbot.TimeoutError:
                pass
            waiting = rows_in_sight(panel.table)
            assert len(waiting) == len(before), f"{len(before)} rows in sight before, {len(waiting)} while it waits"
            assert not fit_problems(window, size), fit_problems(window, size)
        finally:
            second.release.set()
        journey.idle("the jobs ended")
        assert "before (without the experiments)" in panel.compare_label.text()
