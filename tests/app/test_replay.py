"""explorer.app.thread.replay rebuilds a trace exactly: a trace sampled under one seed, with a token the person
forced, is rebuilt on a decoder sampling under another seed, with the same token ids and the same forced steps;
the decoder then holds what the Replay asks, and an empty one holds nothing. The expectation is the first
decoder's own trace, read off it, never the arguments the module computes."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.thread.replay import holds, redo_arguments, replay_arguments, replay_steps
from explorer.app.thread.requests import Replay

PROMPT = np.arange(9) * 7 % 90
FORCED_ID = 17


@pytest.fixture(scope="module")
def loaded():
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama", seed=5)
    return from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")


def decoder(loaded, seed: int):
    from explorer.core.decode import Decoder
    from explorer.core.sampling_settings import Sampling

    return Decoder(loaded, sampling=Sampling(temperature=1.5, seed=seed))


def test_a_sampled_trace_with_a_forced_token_is_rebuilt_under_another_seed(loaded):
    first = decoder(loaded, seed=1)
    first.prefill(PROMPT)
    first.step()
    first.force(FORCED_ID)                 # the person's token after step 1
    first.step()
    first.step()
    trace = first.trace
    arguments = replay_arguments(trace)

    again = decoder(loaded, seed=2)
    rebuilt = replay_steps(again, again.prefill(arguments["ids"]), dict(arguments["forced"]), arguments["n_steps"],
                           arguments["decoded"], check=lambda: None)
    assert list(rebuilt.token_ids) == list(trace.token_ids)
    assert [step.forced for step in rebuilt.steps] == [step.forced for step in trace.steps] == [
        False, True, False, False]
    assert holds(rebuilt, Replay(**arguments))
    assert not holds(decoder(loaded, seed=1).trace, Replay(**arguments))        # nothing run: nothing held


def test_a_redo_keeps_the_prompt_and_the_persons_token_and_samples_the_rest(loaded):
    first = decoder(loaded, seed=1)
    first.prefill(PROMPT)
    first.step()
    first.force(FORCED_ID)
    ids, forced, n_steps, decoded = redo_arguments(first.trace, keep_decoded=False)     # experiments: a branch
    assert list(ids) == list(PROMPT) and forced == {1: FORCED_ID} and n_steps == 2 and decoded == ()
    *_, decoded = redo_arguments(first.trace, keep_decoded=True)                        # a record dtype
    assert decoded == tuple(int(step.chosen_id) for step in first.trace.steps)
