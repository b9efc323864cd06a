"""The KV lab's what-if compares the session the person sees: after a branch its job carries the trace's chosen
ids, and the rows (and the summary that says so) follow them, then the original's greedy choice."""
from __future__ import annotations

import numpy as np

from explorer.app.panels.kv_lab import model_backend
from explorer.app.thread.requests import WhatIfJob

STEPS = 5


def branch(loaded, session) -> list[int]:
    """Decode two steps of the fixture's prompt, forcing the least likely token at step 1; the session's ids."""
    from explorer.core.decode import Decoder

    decoder = Decoder(loaded)
    decoder.prefill(session.trace.steps[0].token_ids)
    decoder.step()
    decoder.force(int(np.argsort(decoder.logits_at(decoder.trace.n_tokens - 1))[0]))
    decoder.step()
    session.set_trace(decoder.trace)
    return [int(step.chosen_id) for step in decoder.trace.steps]


def test_the_what_if_job_and_rows_follow_a_branched_session(kv_lab, bare_session, lab_llama, qtbot):
    chosen = branch(lab_llama, bare_session)
    assert bare_session.trace.steps[1].forced
    kv_lab.set_executor(model_backend(lab_llama))
    jobs = []
    real_job = kv_lab.what_if_job
    kv_lab.what_if_job = lambda *args: jobs.append(real_job(*args)) or jobs[-1]
    with qtbot.waitSignal(kv_lab.runner.finished, timeout=60000):
        assert kv_lab.run_conversion("mha", STEPS)
    assert isinstance(jobs[0], WhatIfJob) and list(jobs[0].followed) == chosen
    rows = kv_lab.result.comparisons
    assert [r.token_id for r in rows[:len(chosen)]] == chosen
    assert all(r.kl < 1e-6 for r in rows)               # MHA from GQA is exact: both models read the same tokens
    summary = kv_lab.run_summary.text()
    assert f"follow this session's tokens for its {len(chosen)} steps, then the original's greedy" in summary
    fed = list(bare_session.trace.token_text[len(bare_session.trace.steps[0].token_ids):])   # the session's, read
    assert [kv_lab.steps_table.item(i, 1).text() for i in range(len(fed))] == fed          # as its trace shows them
