"""Why this token's Cancel takes effect within a layer: the attribution's prefix run went through each layer
with the whole prompt at once and looked at the cancel only between layers, so at 8,000 tokens a Cancel
waited out seconds of one layer's work. The prefix now runs in chunks through the KV cache, the cancel looked
at after each attention and each block of a chunk; chunked, every part still matches transformers."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
import transformers

from explorer.app.thread.core_api import run_named_job
from explorer.app.thread.requests import AttributionJob
from explorer.core import attribution
from explorer.core.runtime import from_tensors
from tests.core.conftest import BASE, randomize
from tests.core.test_attribution import T, _check, _ids, _reference

LONG = 2000            # tokens: a prompt whose layer is long next to anything a Cancel should wait for
WAIT_S = 60            # a bound on a hang only, never on speed


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_a_prefix_run_in_chunks_matches_transformers(family, hf_model, loaded, monkeypatch, chunk):
    """Chunks of 1, 2 and 5 of the 8-token prefix (Mistral's window of 5 falls across chunks)."""
    monkeypatch.setattr(attribution, "PREFIX_CHUNK", chunk)
    ids = _ids(96)
    _check(attribution.attribute(loaded, ids.numpy()), _reference(hf_model, ids, T - 1, None))


@pytest.fixture(scope="module")
def long_llama():
    config = transformers.LlamaConfig(**dict(BASE, num_key_value_heads=2, max_position_embeddings=LONG + 8))
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM._from_config(config, attn_implementation="eager")
    randomize(model, 0)
    return from_tensors(config.to_dict(), model.state_dict(), name="tiny-long-llama")


def test_a_cancel_during_a_layer_stops_it_before_the_layer_has_read_the_whole_prompt(long_llama):
    """The app's job (AttributionJob on the model thread) is cancelled while the first layer's attention runs:
    the layer is held there until the Cancel is set, and the rows it reads afterwards are counted."""
    ids = np.random.default_rng(1).integers(0, BASE["vocab_size"], LONG)
    first = long_llama.model.layers[0].attn
    forward = first.forward
    in_layer, cancel = threading.Event(), threading.Event()
    rows = {"before": 0, "after": 0}

    def held_forward(x, *args, **kwargs):
        rows["after" if cancel.is_set() else "before"] += x.shape[0]
        if not in_layer.is_set():
            in_layer.set()
            assert cancel.wait(WAIT_S)          # the person presses Cancel while this layer runs
        return forward(x, *args, **kwargs)

    outcome = {}

    def job():
        try:
            outcome["result"] = run_named_job(AttributionJob(tuple(int(i) for i in ids), LONG - 1), long_llama,
                                              lambda *_: None, cancel)
        except attribution.AttributionCancelled as error:
            outcome["cancelled"] = error
    first.forward = held_forward
    try:
        worker = threading.Thread(target=job, daemon=True)
        worker.start()
        assert in_layer.wait(WAIT_S)
        cancel.set()
        worker.join(WAIT_S)
        assert not worker.is_alive(), "the attribution went on after the Cancel"
    finally:
        first.forward = forward
    assert "cancelled" in outcome, outcome
    read = rows["before"] + rows["after"]
    assert read < LONG - 1, f"the first layer read {read} of the prompt's {LONG - 1} earlier rows before stopping"
