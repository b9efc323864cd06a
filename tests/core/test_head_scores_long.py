"""The head description of a long prompt, whose maps are rebuilt on demand from Q and K: equal to the
formulas written over transformers' eager attentions, read a row block at a time (memory), kept per
record (a trace one step longer reads one new row per layer), and stopped by its cancel."""
from __future__ import annotations

import dataclasses
import threading
import tracemalloc

import numpy as np
import pytest
import torch
import transformers

from explorer.core import head_description
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.head_description import Cancelled, DescriptionSums, describe_heads, described_so_far
from explorer.core.intervention import Kernel
from explorer.core.runtime import from_tensors
from tests.core.conftest import FAMILIES, randomize

N = 1300                    # 1,300^2 query x key entries: more than ON_DEMAND_FROM, so the prefill's A is on demand


def long_model(family: str, n_layers: int = 2, seed: int = 0):
    """A tiny random model of `family` whose context holds N tokens and a few steps: (transformers, ours)."""
    config_name, model_name, kwargs = FAMILIES[family]
    config = getattr(transformers, config_name)(**dict(kwargs, num_hidden_layers=n_layers,
                                                      max_position_embeddings=N + 16))
    torch.manual_seed(seed)
    hf = getattr(transformers, model_name)._from_config(config, attn_implementation="eager").eval()
    randomize(hf, seed)
    return hf, from_tensors(hf.config.to_dict(), hf.state_dict(), name=f"long-{family}")


def prompt(n: int = N) -> np.ndarray:
    return (np.arange(n) * 37 + np.arange(n) // 7) % 96


def reference(hf, ids: np.ndarray) -> dict[str, np.ndarray]:
    """The module's three formulas in float64 over transformers' eager attentions of `ids`: (L, N_Q) each."""
    with torch.inference_mode():
        attentions = hf(torch.tensor(ids)[None], output_attentions=True).attentions
    out = {name: [] for name in head_description.NAMES}
    positions = np.arange(len(ids))
    for a in attentions:
        a = a[0].double().numpy()                                                   # (H, T, T)
        logs = np.log(np.where(a > 0, a, 1.0))
        out["entropy"].append(-(a * logs).sum(-1).mean(-1))
        out["distance"].append((a * (positions[:, None] - positions[None, :])).sum(-1).mean(-1))
        out["first_token"].append(a[:, :, 0].mean(-1))
    return {name: np.array(rows) for name, rows in out.items()}


@pytest.fixture(scope="module")
def llama():
    hf, loaded = long_model("llama")
    decoder = Decoder(loaded, RecordOptions(), capacity=N + 8)
    prefill = decoder.prefill(prompt())
    return hf, prefill, decoder.step(), decoder.trace.token_ids


@pytest.mark.parametrize("family", ["llama", "mistral"])          # mistral: a sliding window of 5 keys
def test_a_long_prompt_is_described_as_transformers_attends(family, monkeypatch):
    monkeypatch.setattr(head_description, "BLOCK", 512)           # three row blocks, the last one short
    hf, loaded = long_model(family)
    trace = Decoder(loaded, RecordOptions(), capacity=N).prefill(prompt())
    assert trace.steps[0].layers[0].attn.on_demand
    described = describe_heads(trace)
    for name, expected in reference(hf, prompt()).items():
        np.testing.assert_allclose(getattr(described, name), expected, rtol=1e-4, atol=1e-5, err_msg=name)


def test_decoding_rows_count_beside_the_on_demand_prefill(llama):
    hf, _, trace, ids = llama
    described = describe_heads(trace)                              # the prefill's N rows, then one stored row
    assert not trace.steps[1].layers[0].attn.on_demand
    for name, expected in reference(hf, ids).items():
        np.testing.assert_allclose(getattr(described, name), expected, rtol=1e-4, atol=1e-5, err_msg=name)


def test_another_kernel_is_described_from_its_own_weights(llama):
    """A relu kernel (an experiment) takes the general path: A = Z^-1 max(0, S), written out here."""
    _, prefill, _, _ = llama
    record = prefill.steps[0].layers[1].attn
    relu = dataclasses.replace(record, kernel=Kernel("relu"))
    sums = head_description.record_sums(relu, prefill.steps[0].positions)
    causal = np.tril(np.ones((N, N), dtype=bool))
    for head in (0, 3):
        s = record.q[head].astype(np.float64) @ record.k[record.kv_head_of(head)].astype(np.float64).T * record.scale
        f = np.where(causal, np.maximum(s, 0.0), 0.0)
        z = f.sum(-1, keepdims=True)
        a = np.divide(f, z, out=np.zeros_like(f), where=z != 0)
        logs = np.log(np.where(a > 0, a, 1.0))
        np.testing.assert_allclose(sums[0, head], -(a * logs).sum(), rtol=1e-4)
        np.testing.assert_allclose(sums[1, head], (a * (np.arange(N)[:, None] - np.arange(N))).sum(), rtol=1e-4)
        np.testing.assert_allclose(sums[2, head], a[:, 0].sum(), rtol=1e-4)


def test_a_long_map_is_read_a_block_at_a_time(llama, monkeypatch):
    """Peak memory while describing a record stays near a few BLOCK x T blocks, far below one T x T map."""
    monkeypatch.setattr(head_description, "BLOCK", 128)
    _, prefill, _, _ = llama
    record = prefill.steps[0].layers[0].attn
    tracemalloc.start()
    head_description.record_sums(record, prefill.steps[0].positions)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    block = 128 * N * 4                                            # one float32 block of scores
    assert peak < 8 * block < N * N * 4


def test_sums_are_kept_per_record_and_a_longer_trace_reads_only_its_new_rows(llama):
    _, prefill, longer, _ = llama
    sums = DescriptionSums()
    first = describe_heads(prefill, sums=sums)
    assert sums.computed == prefill.model.n_layers
    again = describe_heads(prefill, sums=sums)
    assert sums.computed == prefill.model.n_layers and np.array_equal(again.entropy, first.entropy)
    assert np.isnan(described_so_far(longer, sums).entropy).all()   # the new rows are not read yet
    describe_heads(longer, sums=sums)
    assert sums.computed == 2 * prefill.model.n_layers            # one decoding row per layer, not the prefill
    np.testing.assert_array_equal(described_so_far(longer, sums).entropy, describe_heads(longer).entropy)


def test_a_cancel_stops_within_the_layer_and_keeps_what_was_done(llama):
    _, prefill, _, _ = llama
    sums, cancel, seen = DescriptionSums(), threading.Event(), []

    def on_layer(layer):
        seen.append(layer)
        cancel.set()

    with pytest.raises(Cancelled):
        describe_heads(prefill, sums=sums, cancel=cancel, on_layer=on_layer)
    assert seen == [0] and sums.computed == 1
    partial = described_so_far(prefill, sums)
    assert partial.layers_done == 1 and np.isnan(partial.entropy[1]).all()
    np.testing.assert_array_equal(partial.entropy[0], describe_heads(prefill).entropy[0])
