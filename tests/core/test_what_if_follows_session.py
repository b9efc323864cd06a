"""The what-if rows follow the session the person sees: its forced and sampled tokens, then greedy decoding."""
from __future__ import annotations

import numpy as np

from explorer.core import what_if
from explorer.core.decode import Decoder
from explorer.core.sampling import Sampling
from tests.core.test_convert import IDS, load

SESSION_STEPS = 4


def branched_session(loaded):
    """A session sampled at temperature 1 with a token forced at step 1 (a branch the greedy path never takes)."""
    session = Decoder(loaded, sampling=Sampling(temperature=1.0, seed=7))
    session.prefill(IDS.numpy())
    session.step()
    branch = int(np.argsort(session.logits_at(session.trace.n_tokens - 1))[0])   # the least likely token
    session.force(branch)
    for _ in range(SESSION_STEPS - 2):
        session.step()
    return session.trace


def test_what_if_rows_take_the_sessions_tokens_then_decode_greedily():
    llama = load("llama")
    trace = branched_session(llama)
    chosen = [int(step.chosen_id) for step in trace.steps]
    assert trace.steps[1].forced and len(chosen) == SESSION_STEPS
    steps = SESSION_STEPS + 2
    result = what_if.what_if(llama, "mha", IDS.numpy(), steps=steps, followed=chosen)
    rows = result.comparisons
    assert [r.token_id for r in rows[:SESSION_STEPS]] == chosen
    assert result.followed == SESSION_STEPS
    # past the session the original's greedy choice, read from its own logits at that position
    original = Decoder(llama)
    original.prefill(np.concatenate((IDS.numpy(), chosen)))
    assert rows[SESSION_STEPS].token_id == int(np.argmax(original.logits_at(original.trace.n_tokens - 1)))
    # both models read the session's tokens: the original's trace holds them, and MHA from GQA is exact
    assert list(result.original.token_ids[len(IDS):len(IDS) + SESSION_STEPS]) == chosen
    assert np.array_equal(result.original.token_ids, result.converted.token_ids)
    assert all(r.kl < 1e-6 and r.top1_agrees for r in rows), [r.kl for r in rows]
    assert not any(step.forced for step in result.original.steps)   # taken as the sampler's, as a replay does


def test_without_followed_ids_the_what_if_decodes_greedily():
    llama = load("llama")
    result = what_if.what_if(llama, "mha", IDS.numpy(), steps=2)
    original = Decoder(llama)
    original.prefill(IDS.numpy())
    assert result.comparisons[0].token_id == int(np.argmax(original.logits_at(original.trace.n_tokens - 1)))
    assert result.followed == 0
