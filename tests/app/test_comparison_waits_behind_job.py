"""In the real window, an ablation asked while a panel's job holds the model thread (Alt-click while the head atlas
scores, issue 22 item 8): the replay's dialog says what it waits for, never 100 % ahead of its run; the Next token
panel's comparison, queued behind another job, says it waits rather than that it compares; once the jobs end, the
dialog is closed and the comparison shown equals the model's own, unqueued (one uncached pass of the core)."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.thread.requests import HeadScoresJob
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS
from tests.app.test_experiments_worker import _top_probs_after
from tests.app.test_replay_waits_behind_job import HeldJob, _start

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder
ABLATE = Intervention(ablations=(HeadAblation(0, 1),))
ATLAS = HeadScoresJob.what


class _Executor:
    """Hands a job to the model thread as a panel does (session.requests.model_job_requested)."""

    def __init__(self, requests) -> None:
        self.run_job = requests.model_job_requested.emit


def test_a_comparison_behind_the_atlas_says_it_waits(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS["1366x768"]) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        window = journey.window
        journey.raise_panel("experiments")
        panel = journey.raise_panel("next_token")
        progress, requests = window.controller.run_progress, window.session.requests

        first = HeldJob(lambda loaded, p, cancel: "first")         # the atlas scoring as the person Alt-clicks
        first.what = ATLAS
        _first_call, first_answers = _start(first, _Executor(requests))
        qtbot.waitUntil(first.started.is_set, timeout=10000)
        window.session.add_experiment(ABLATE)               # the replay under it waits behind the atlas
        second = HeldJob(lambda loaded, p, cancel: "second")
        second.what = ATLAS                                 # the atlas asked again as the new trace comes
        _second_call, second_answers = _start(second, _Executor(requests))
        try:
            qtbot.waitUntil(lambda: progress.dialog is not None, timeout=5000)
            said = progress.dialog.toolTip()
            assert f"Waiting for {ATLAS}" in said and progress.dialog.value() == 0, said
        finally:
            first.release.set()
        try:
            qtbot.waitUntil(second.started.is_set, timeout=20000)
            qtbot.waitUntil(lambda: progress.dialog is None, timeout=5000)      # its trace came: its dialog went
            qtbot.waitUntil(lambda: window.session.trace_intervention == ABLATE, timeout=10000)
            qtbot.wait(200)
            said = panel.waiting_line.text()      # the held atlas runs: whatever the comparison does, it waits
            claims = "comparing to the plain run…" in said.replace("then comparing", "")
            assert not claims and said, f"the label says it compares while {ATLAS} holds the thread: {said}"
            if "waiting for" in said:
                assert f"waiting for {ATLAS} to finish" in said, said
        finally:
            second.release.set()
        journey.idle("the jobs ended")
        if window.session.comparison is None:       # none asked while the atlas held the thread: Compare asks it
            journey.act("Compare", window.docks["experiments"].widget().compare_button.clicked.emit)
        assert first_answers == [("ok", "first")] and second_answers == [("ok", "second")]
        assert "before (without the experiments)" in panel.compare_label.text()
        trace, (_, ids, result) = window.session.trace, window.session.comparison
        assert ids == tuple(int(i) for i in trace.token_ids)
        expected = _top_probs_after(str(BUNDLED / "shakespeare-gqa"), ids, ABLATE)
        np.testing.assert_allclose(np.sort(result.after_probs)[::-1][:5], expected[:5], atol=1e-5)
