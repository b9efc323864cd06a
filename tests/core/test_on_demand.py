"""Attention on demand: the trace keeps Q, K, V and X, and rebuilds any head's A exactly when asked.

References: transformers' eager attentions (every decoder family, BERT), the engine's own eager
weights (stored traces, the encoder-decoder's teacher-forced pass), and the O(L T d) size formula.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from explorer.core import attention_maps
from explorer.core.attention_maps import MaskRule
from explorer.core.capture import StepCapture
from explorer.core.decode import Decoder
from explorer.core.drivers import make_decoder
from explorer.core.recording import RecordOptions, attention_record, attention_tensors, to_numpy
from explorer.core.runtime import from_tensors
from tests.core.conftest import make_hf_model

T, STEPS = 14, 3


@pytest.fixture(autouse=True)
def every_prefill_on_demand(monkeypatch):
    """Short prompts store their maps by default (recording.ON_DEMAND_FROM); these tests rebuild every one."""
    from explorer.core import recording

    monkeypatch.setattr(recording, "ON_DEMAND_FROM", 0)


def _ids(n: int = T, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 96, n)


def _reference_attentions(hf_model, ids: np.ndarray) -> list[np.ndarray]:
    with torch.inference_mode():
        out = hf_model(torch.as_tensor(ids)[None], output_attentions=True)
    return [a[0].numpy() for a in out.attentions]


def test_prefill_maps_rebuilt_on_demand_equal_transformers(family, hf_model, loaded):
    """Every family: sliding windows (mistral, Gemma 3's local layers), Gemma's global layers, MLA."""
    ids = _ids()
    trace = make_decoder(loaded, RecordOptions(), capacity=T + 1).prefill(ids)
    for layer, expected in enumerate(_reference_attentions(hf_model, ids)):
        record = trace.steps[0].layers[layer].attn
        assert record.on_demand                                          # nothing of A was stored
        np.testing.assert_allclose(trace.attention(layer), expected, atol=1e-5, rtol=0)
        head = expected.shape[0] - 1
        np.testing.assert_allclose(trace.attention_head(layer, head), expected[head], atol=1e-5, rtol=0)
        np.testing.assert_allclose(trace.attention_row(layer, head, T - 2), expected[head, T - 2], atol=1e-5, rtol=0)


def test_on_demand_maps_equal_the_engines_stored_maps(family, loaded):
    ids = _ids()
    stored = make_decoder(loaded, RecordOptions(attention="stored"), capacity=T + STEPS)
    demand = make_decoder(loaded, RecordOptions(), capacity=T + STEPS)
    for decoder in (stored, demand):
        decoder.prefill(ids)
        for _ in range(STEPS):
            decoder.step()
    assert stored.trace.steps[0].layers[0].attn.weights_packed is not None
    for layer in range(loaded.config.n_layers):
        np.testing.assert_allclose(demand.trace.attention(layer), stored.trace.attention(layer), atol=1e-5, rtol=0)
        np.testing.assert_allclose(demand.trace.head_out(layer, 0), stored.trace.head_out(layer, 0), atol=1e-5)


def test_a_decoding_steps_recorded_row_equals_the_row_rebuilt_from_the_cache(family, loaded):
    decoder = make_decoder(loaded, RecordOptions(), capacity=T + STEPS)
    decoder.prefill(_ids())
    for _ in range(STEPS):
        decoder.step()
    trace = decoder.trace
    for layer in range(loaded.config.n_layers):
        record = trace.steps[-1].layers[layer].attn
        assert not record.on_demand and record.n_new == 1                # the new row is recorded
        for head in range(record.n_heads):
            keys = trace.k(layer, record.kv_head_of(head))[record.kv_positions]       # the cache's own K
            rebuilt = attention_maps.weights(record.q[head], keys, record.mask, record.scale, record.softcap)
            np.testing.assert_allclose(record.weights_of(head), rebuilt, atol=1e-6, rtol=0)


def test_a_changed_q_changes_the_rebuilt_map(loaded):
    """The comparison can fail: the map is rebuilt from the recorded Q, so a different Q shows."""
    trace = make_decoder(loaded, RecordOptions(), capacity=T).prefill(_ids())
    record = trace.steps[0].layers[0].attn
    bumped = replace(record, q=record.q + np.float32(0.5))
    assert np.abs(bumped.weights_of(0) - record.weights_of(0)).max() > 1e-3


def test_the_mask_is_kept_as_its_rule():
    hf_model = make_hf_model("gemma3")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=256), hf_model.state_dict())
    trace = Decoder(loaded, RecordOptions(), capacity=200).prefill(np.arange(150) % 96)
    kinds = [trace.steps[0].layers[i].attn.mask for i in range(2)]
    assert [m.kind for m in kinds] == ["sliding", "causal"] and kinds[0].window == 5
    positions = np.arange(150)
    causal = positions[None, :] <= positions[:, None]
    np.testing.assert_array_equal(trace.mask(1), causal)
    np.testing.assert_array_equal(trace.mask(0), causal & (positions[None, :] > positions[:, None] - 5))
    assert kinds[0].sum() == int(np.asarray(kinds[0]).sum()) and kinds[0].nbytes <= 2 * 150 * 8   # the positions, O(T)


def test_an_edited_mask_stays_dense():
    """A record keeps the rule a pass hands on and the array of a mask that came without one; it never
    finds a rule again from the array, even where the array is exactly a rule's (a causal mask)."""
    from explorer.core.recording import MaskCompactor
    from explorer.core.visibility import Visibility

    positions = np.arange(200)
    causal = positions[None, :] <= positions[:, None]
    seen = Visibility.by(MaskRule.of(positions, positions), "cpu")
    hidden = np.zeros_like(causal)
    hidden[150, 3] = True                                                # an intervention hid one entry
    edited = seen.without(hidden)
    masks = MaskCompactor()
    kept = masks(edited.mask, edited.keys, edited.rule)
    assert not isinstance(kept, MaskRule)
    np.testing.assert_array_equal(kept, causal & ~hidden)
    assert masks(seen.mask, seen.keys, seen.rule) is seen.rule
    assert masks(causal, positions) is causal                            # no rule came: the array, not a guess


def test_bert_maps_rebuilt_on_demand_equal_transformers():
    from tests.core.test_encoder import TINY, runner_for, tiny_bert

    hf_model = tiny_bert()
    ids = np.random.default_rng(0).integers(0, TINY["vocab_size"], size=11)
    trace = runner_for(hf_model).prefill(ids)
    with torch.no_grad():
        reference = hf_model(torch.as_tensor(ids)[None], output_attentions=True)
    for layer, expected in enumerate(reference.attentions):
        assert trace.steps[0].layers[layer].attn.on_demand
        np.testing.assert_allclose(trace.attention(layer), expected[0].numpy(), atol=1e-5, rtol=0)


def test_cross_attention_rebuilt_on_demand_equals_the_models_weights():
    from explorer.core.encdec import TargetStep
    from tests.core.test_encdec import FORCED, SOURCE, TINY, tiny_loaded

    loaded = tiny_loaded()
    target = torch.as_tensor([TINY.bos_id] + FORCED)[None]
    capture = StepCapture(TINY.n_decoder_layers)
    with torch.no_grad():
        memory = loaded.model.encode(torch.as_tensor(SOURCE)[None])
        loaded.model.decode(target, TargetStep(np.arange(target.shape[1]), None),
                            loaded.model.cross_keys_values(memory), None, capture)
    for layer in capture.layers:
        for captured in (layer.cross, layer.attn):
            tensors = attention_tensors(captured, skipped=frozenset({"weights"}))
            record = attention_record(captured, to_numpy([tensors], torch.float32)[0])
            assert record.on_demand
            np.testing.assert_allclose(record.weights, captured.weights.numpy(), atol=1e-6, rtol=0)


def test_back_force_and_float16_replay_exactly(loaded):
    first = make_decoder(loaded, RecordOptions(dtype="float16"), capacity=T + STEPS + 1)
    first.prefill(_ids())
    for _ in range(STEPS):
        first.step()
    again = make_decoder(loaded, RecordOptions(dtype="float16"), capacity=T + STEPS + 1)
    again.prefill(_ids())
    again.step()
    again.force(int(first.trace.steps[1].chosen_id))                     # the same choice, forced
    for _ in range(STEPS - 1):
        again.step()
    again.back()
    again.step()
    last = loaded.config.n_layers - 1
    np.testing.assert_array_equal(again.trace.attention(last), first.trace.attention(last))
    full = make_decoder(loaded, RecordOptions(), capacity=T + 1).prefill(_ids())
    np.testing.assert_allclose(first.trace.attention_head(last, 0, 0), full.attention_head(last, 0), atol=2e-3)


def test_trace_bytes_at_4096_tokens_follow_the_o_l_t_d_formula():
    """bytes = T (d_model [E] + L (N_Q d_qk [Q] + N_KV (d_qk + d_v) [K, V])) * itemsize: a long prefill keeps no X."""
    hf_model = make_hf_model("llama")
    config = dict(hf_model.config.to_dict(), max_position_embeddings=4200)
    loaded = from_tensors(config, hf_model.state_dict())
    n = 4096
    trace = Decoder(loaded, RecordOptions(dtype="float16"), capacity=n + 1).prefill(np.arange(n) % 96)
    c = loaded.config
    per_token = c.d_model + c.n_layers * (c.n_heads * c.d_qk + c.n_kv_heads * (c.d_qk + c.d_v))
    expected = n * per_token * 2
    assert abs(trace.nbytes() - expected) / expected < 0.10, (trace.nbytes(), expected)


def test_a_prefill_nobody_records_runs_the_fused_kernel_with_the_same_outputs(family, loaded, monkeypatch):
    from explorer.core import fused_attention

    calls = []
    original = fused_attention.fused
    monkeypatch.setattr(fused_attention, "fused", lambda *args: calls.append(1) or original(*args))
    ids = _ids()
    stored = make_decoder(loaded, RecordOptions(attention="stored"), capacity=T + 1)
    stored.prefill(ids)
    assert calls == []                                                   # A recorded: the explicit path
    demand = make_decoder(loaded, RecordOptions(), capacity=T + 1)
    demand.prefill(ids)
    mla = family.startswith("deepseek")                                  # MLA keeps its explicit path
    assert len(calls) == (0 if mla or loaded.config.attn_softcap else loaded.config.n_layers)
    np.testing.assert_allclose(demand.logits_at(T - 1), stored.logits_at(T - 1), atol=1e-4, rtol=0)
    np.testing.assert_allclose(demand.trace.steps[0].layers[-1].attn.q, stored.trace.steps[0].layers[-1].attn.q,
                               atol=1e-5)


@pytest.mark.parametrize("kernel", [("relu", 1.0), ("linear", 1.0), ("exp", 0.5)])
def test_maps_rebuilt_under_an_intervention_use_its_kernel_and_hidden_entries(kernel):
    from explorer.core.intervention import HideEntry, Intervention, Kernel, KernelChoice

    hf_model = make_hf_model("gemma3")                                   # softcap-free, local and global layers
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    intervention = Intervention(kernels=(KernelChoice(Kernel(*kernel), (1,)),), edits=(HideEntry(9, 4),))
    traces = []
    for attention in ("stored", "on_demand"):
        decoder = Decoder(loaded, RecordOptions(attention=attention), capacity=T + 1)
        decoder.set_intervention(intervention)
        traces.append(decoder.prefill(_ids()))
    stored, demand = traces
    assert demand.steps[0].layers[1].attn.on_demand and demand.steps[0].layers[1].attn.kernel == Kernel(*kernel)
    assert not demand.mask(0)[9, 4]                                      # the hidden entry
    for layer in range(2):
        # The linear kernel's Z (a sum of signed scores) can nearly cancel, so its weights reach ±40 and carry the
        # float32 rounding of both passes ×40 (1e-5 apart on one CPU's kernels, 1e-7 on another's): relative there.
        np.testing.assert_allclose(demand.attention(layer), stored.attention(layer), atol=1e-6, rtol=1e-5)


def test_kept_maps_stay_within_their_budget_and_drop_the_least_recent():
    from explorer.core.trace import AttentionRecord

    def record():
        return AttentionRecord(q=np.zeros((1, 4, 2), np.float32), k=np.zeros((1, 4, 2), np.float32),
                               v=np.zeros((1, 4, 2), np.float32), weights_packed=None,
                               mask=np.tril(np.ones((4, 4), bool)), kv_positions=np.arange(4), scale=1.0)

    kept = attention_maps.KeptMaps(limit=3 * 64)
    owners = [record() for _ in range(4)]
    for owner in owners[:3]:
        kept.put(owner, 0, np.zeros((4, 4), np.float32))               # 64 bytes each: exactly the budget
    assert kept.get(owners[0], 0) is not None                           # asked again: now the most recent
    kept.put(owners[3], 0, np.zeros((4, 4), np.float32))
    assert kept.get(owners[1], 0) is None                               # the least recently asked went
    assert all(kept.get(o, 0) is not None for o in (owners[0], owners[2], owners[3]))
    assert kept.get(record(), 0) is None                                # another record: nothing kept for it


def test_short_prompts_store_their_maps_and_long_ones_rebuild_them(loaded, monkeypatch):
    from explorer.core import recording

    monkeypatch.setattr(recording, "ON_DEMAND_FROM", 12 * 12)
    short = make_decoder(loaded, RecordOptions(), capacity=T).prefill(_ids(11))
    long = make_decoder(loaded, RecordOptions(), capacity=T).prefill(_ids(12))
    assert not short.steps[0].layers[0].attn.on_demand and long.steps[0].layers[0].attn.on_demand
