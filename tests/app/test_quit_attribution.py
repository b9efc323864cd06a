"""Why this token's attribution stops within a layer of Stop or of quitting: its run over a long prompt (one
uncaptured pass over the prefix, then the last token's) checks its cancel after every block. It once ran to
the end whatever was asked, so Stop waited for it and quitting waited up to threads.JOIN_S.

The 30-layer SmolLM2-135M runs the Why panel's own job on the app's model thread; once the job has passed its
second cancel point (the prefix's first block), Stop, then (a second job) quitting, is asked, and the child
prints how long each took to return: the job must end cancelled, never finished."""
from __future__ import annotations

import re

import pytest

from tests.app.quit_child import assert_clean_exit, run_child

PROMPT_TOKENS = 1500        # a long prompt: its whole run takes seconds, one block of it a small part of that

STEPS = f"""
    from explorer.app.thread.requests import AttributionJob
    from explorer.app.widgets.model_call import ModelCall

    open_and_run("The quick brown fox jumps over the lazy dog.")
    ids = tuple(int(i) for i in list(window.session.trace.token_ids) * {PROMPT_TOKENS})[:{PROMPT_TOKENS}]
    polls, ended = [], []

    def attribution(loaded, progress, cancel):          # the Why panel's job, counting its cancel points
        class Counted:
            def is_set(self):
                polls.append(time.monotonic())
                return cancel.is_set()
        try:
            AttributionJob(ids, None, None)(loaded, progress, Counted())
            ended.append((time.monotonic(), "finished"))
        except Exception as error:
            ended.append((time.monotonic(), type(error).__name__))
            raise

    def start_attribution():
        polls.clear()
        ended.clear()
        ModelCall(window).start(attribution, window.session.requests.model_job_requested.emit)
        settle(lambda: len(polls) >= 2 or ended)         # past the prefix's first block (or, deaf, done)

    start_attribution()
    asked = time.monotonic()
    window.controller.stop()                            # Stop, as the toolbar's button
    settle(lambda: ended)
    print(f"stop: {{ended[0][1]}} after {{ended[0][0] - asked:.3f}} s", flush=True)

    start_attribution()
    asked = time.monotonic()
    quit_app()
    threads.stop_all()                                  # what atexit does: join every thread
    print(f"quit: {{ended[0][1]}} after {{time.monotonic() - asked:.3f}} s", flush=True)
"""


def smollm2() -> str:
    from explorer.core import store

    path = store.pulled_path("smollm2-135m")
    if path is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    return str(path)


@pytest.mark.realmodel
def test_stop_and_quit_end_an_attribution_within_a_layer(tmp_path):
    done = run_child(tmp_path, STEPS, smollm2(), join_s=300.0)
    assert_clean_exit(done)
    assert "Waiting for" not in done.stderr, done.stderr[-2000:]
    ends = dict(re.findall(r"^(stop|quit): (\w+) after [0-9.]+ s$", done.stdout, re.MULTILINE))
    assert ends == {"stop": "AttributionCancelled", "quit": "AttributionCancelled"}, done.stdout
    print(done.stdout)
