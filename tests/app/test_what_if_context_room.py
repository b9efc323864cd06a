"""The KV lab's what-if keeps within the model's context (drive21 m18): a session whose prompt fills the context
ran 'Convert and compare (steps 8)', then read 'No result for mha: the conversion failed.' beside 'the context of
256 tokens is full'. The steps box holds at most what the context leaves, a run asked past it is refused before it
runs in words that say what to change, and the core's own refusal is not called a failure. The boundary is
checked against the core's what_if itself, not a formula copied from the panel."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels.kv_lab import model_backend
from explorer.app.widgets.what_if_runner import what_if_job

FREE = 3                    # positions the session's prompt leaves free in the tiny model's context


@pytest.fixture
def full_lab(kv_lab, bare_session, lab_llama):
    """The KV lab on a session whose prompt leaves FREE positions of the context."""
    from explorer.core.decode import Decoder

    context = lab_llama.info.max_positions
    bare_session.set_trace(Decoder(lab_llama).prefill(np.arange(context - FREE) % 90))
    kv_lab.set_executor(model_backend(lab_llama))
    kv_lab.redraw()
    return kv_lab, lab_llama, context


def test_the_steps_box_holds_what_the_context_leaves(full_lab, qtbot):
    from explorer.core.errors import ExplorerError
    from explorer.core.what_if import what_if

    kv_lab, loaded, context = full_lab
    most = kv_lab.steps_box.maximum()
    prompt = kv_lab.trace.steps[0].token_ids
    assert len(what_if(loaded, "mha", prompt, most).comparisons) == most        # the core compares that many
    with pytest.raises(ExplorerError, match="is full"):
        what_if(loaded, "mha", prompt, most + 1)                               # and refuses one more
    assert kv_lab.steps_box.value() <= most
    assert not kv_lab.run_conversion("mha", most + 1)                          # refused before it runs
    summary = kv_lab.run_summary.text()
    assert f"needs 1 more token than the context of {context} holds" in summary, summary
    assert "fewer steps or a shorter prompt" in summary and "failed" not in summary
    assert not kv_lab.runner.running


def test_the_cores_full_context_is_a_refusal_not_a_failure(full_lab, qtbot):
    kv_lab, loaded, context = full_lab
    prompt = kv_lab.trace.steps[0].token_ids
    with qtbot.waitSignal(kv_lab.runner.failed, timeout=60000):
        kv_lab.runner.convert("mha", FREE + 5, what_if_job("mha", FREE + 5, prompt), kv_lab.executor)
    summary = kv_lab.run_summary.text()
    assert "failed" not in summary and f"context of {context} tokens is full" in summary, summary
    assert "fewer steps or a shorter prompt" in summary
    assert not kv_lab.error_line.isVisible()
