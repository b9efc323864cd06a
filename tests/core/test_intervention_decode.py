"""Interventions under cached decoding, Back and Force, and in the encoder and encoder-decoder.

A decoder given an intervention runs every pass under it: its cached steps equal one uncached
forward of the whole sequence under the same run (whose prompt means the prefill fixed).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.decode import Decoder
from explorer.core.intervention import HeadAblation, HideBand, HideToken, Intervention, Kernel, KernelChoice
from explorer.core.intervention_run import InterventionRun

PROMPT = np.array([5, 17, 42, 8, 63, 21], dtype=np.int64)
STEPS = 8          # past the sliding windows (5) of the fixtures
EVERYTHING = Intervention(
    kernels=(KernelChoice(Kernel("relu"), layers=(0,)), KernelChoice(Kernel("exp", 0.7), layers=(1,))),
    ablations=(HeadAblation(0, 1, "mean"), HeadAblation(1, 2)),
    edits=(HideToken(key=2, first_layer=1), HideBand(low=3, high=4)))


def _uncached(loaded, ids, run) -> np.ndarray:
    with torch.inference_mode():
        hidden = loaded.model(torch.as_tensor(ids), np.arange(len(ids)), None, None, run)
        return loaded.model.logits(hidden).numpy()


def _assert_decoder_equals_uncached(loaded, decoder) -> None:
    ids = decoder.trace.token_ids
    expected = _uncached(loaded, ids, decoder._intervened)
    scale = np.abs(expected).max()
    for position in range(len(ids)):
        assert np.abs(decoder.logits_at(position) - expected[position]).max() / scale < 1e-5, position


def test_cached_decoding_under_an_intervention_equals_the_uncached_forward(loaded):
    decoder = Decoder(loaded, capacity=4, intervention=EVERYTHING)
    decoder.prefill(PROMPT)
    for _ in range(STEPS):
        decoder.step()
    _assert_decoder_equals_uncached(loaded, decoder)
    plain = Decoder(loaded)
    plain.prefill(PROMPT)
    assert np.abs(plain.logits_at(len(PROMPT) - 1) - decoder.logits_at(len(PROMPT) - 1)).max() > 1e-3


def test_the_prompt_mean_is_fixed_by_the_prefill(loaded):
    """A mean ablation's value is the mean over the prompt, not over the tokens generated later."""
    decoder = Decoder(loaded, intervention=Intervention(ablations=(HeadAblation(1, 0, "mean"),)))
    decoder.prefill(PROMPT)
    for _ in range(3):
        decoder.step()
    with torch.inference_mode():
        prompt_only = InterventionRun(decoder.intervention)
        _uncached(loaded, PROMPT, prompt_only)                      # the prompt alone fixes the means
    np.testing.assert_allclose(_uncached(loaded, decoder.trace.token_ids, prompt_only)[-1],
                               decoder.logits_at(len(decoder.trace.token_ids) - 1), rtol=0, atol=1e-4)


def test_back_and_force_keep_the_intervention(loaded):
    decoder = Decoder(loaded, intervention=EVERYTHING)
    decoder.prefill(PROMPT)
    for _ in range(4):
        decoder.step()
    before = decoder.trace.steps[-1]
    decoder.back()
    again = decoder.step().steps[-1]
    np.testing.assert_array_equal(before.top_ids, again.top_ids)
    np.testing.assert_allclose(before.top_probs, again.top_probs, atol=1e-6)
    decoder.force(33)
    decoder.step()
    decoder.step()
    assert decoder.trace.token_ids[len(PROMPT) + 4] == 33
    _assert_decoder_equals_uncached(loaded, decoder)


def test_a_new_prefill_under_set_intervention_branches(loaded):
    decoder = Decoder(loaded)
    plain = decoder.prefill(PROMPT).steps[0]
    decoder.set_intervention(Intervention(ablations=tuple(HeadAblation(l, h) for l in range(2) for h in range(2))))
    ablated = decoder.prefill(PROMPT).steps[0]
    assert not np.allclose(plain.top_probs, ablated.top_probs)
    decoder.set_intervention(None)
    np.testing.assert_array_equal(decoder.prefill(PROMPT).steps[0].top_probs, plain.top_probs)


def test_the_encoder_decoder_reads_interventions_in_every_sublayer():
    from explorer.core.encdec_decode import EncDecDecoder
    from tests.core.test_encdec import SOURCE, tiny_loaded

    loaded = tiny_loaded()
    intervention = Intervention(
        kernels=(KernelChoice(Kernel("relu"), (0,), "cross"), KernelChoice(Kernel("linear"), (1,), "encoder")),
        ablations=(HeadAblation(0, 1, where="self"), HeadAblation(1, 2, where="cross")))
    decoder = EncDecDecoder(loaded, intervention=intervention)
    trace = decoder.prefill(SOURCE)
    for _ in range(3):
        trace = decoder.step()
    step = trace.steps[-1]
    cross = step.layers[0].cross
    s = np.einsum("hqd,hkd->hqk", cross.q, cross.k) * cross.scale                  # S of the cross-attention
    f = np.maximum(s, 0.0)
    z = f.sum(-1, keepdims=True)                                                   # a row with Z = 0 is all 0
    np.testing.assert_allclose(cross.weights, np.divide(f, z, out=np.zeros_like(f), where=z != 0), atol=1e-5)
    assert cross.kernel == Kernel("relu") and trace.encoder.layers[1].attn.kernel == Kernel("linear")
    enc = trace.encoder.layers[1].attn
    s = np.einsum("hqd,hkd->hqk", enc.q, enc.k) * enc.scale
    np.testing.assert_allclose(enc.weights, s / s.sum(-1, keepdims=True), atol=1e-4, rtol=1e-4)
    # the ablated heads' O_h are zero before W^O
    capture_heads = _encdec_head_outputs(loaded, decoder, trace)
    assert np.all(capture_heads["self"][1] == 0) and np.all(capture_heads["cross"][2] == 0)


def _encdec_head_outputs(loaded, decoder, trace):
    from explorer.core.capture import StepCapture
    from explorer.core.encdec import TargetStep

    capture = StepCapture(loaded.config.n_decoder_layers)
    ids = torch.as_tensor(trace.token_ids)[None]
    with torch.inference_mode():
        loaded.model.decode(ids, TargetStep(np.arange(ids.shape[1]), None, decoder._intervened),
                            decoder.kv_cache.cross, None, capture)
    return {"self": capture.layers[0].attn.head_out.numpy(), "cross": capture.layers[1].cross.head_out.numpy()}


def test_bert_ablation_matches_a_hook_on_its_output_projection():
    from tests.core.test_encoder import TINY, runner_for, tiny_bert

    hf_model = tiny_bert()
    runner = runner_for(hf_model)
    ids = np.random.default_rng(1).integers(0, TINY["vocab_size"], size=9)
    d_v = TINY["hidden_size"] // TINY["num_attention_heads"]

    def zero_head(module, args):
        x = args[0].clone()
        x[..., 2 * d_v: 3 * d_v] = 0.0
        return (x,)
    handle = hf_model.encoder.layer[1].attention.output.dense.register_forward_pre_hook(zero_head)
    try:
        with torch.no_grad():
            expected = hf_model(torch.as_tensor(ids)[None]).last_hidden_state[0]
    finally:
        handle.remove()
    with torch.no_grad():
        got = runner.model(torch.as_tensor(ids)[None], None, None, Intervention(ablations=(HeadAblation(1, 2),)))[0]
        plain = runner.model(torch.as_tensor(ids)[None])[0]
    np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-4, rtol=0)
    assert (got - plain).abs().max() > 1e-2
    runner.set_intervention(Intervention(kernels=(KernelChoice(Kernel("relu")),)))
    assert runner.prefill(ids).steps[0].layers[0].attn.kernel == Kernel("relu")


@pytest.mark.parametrize("absorbed", [True, False])
def test_mla_absorbed_and_naive_paths_agree_under_an_intervention(absorbed, monkeypatch):
    from explorer.core.mla import LatentAttention
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("deepseek_v3")
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    monkeypatch.setattr(LatentAttention, "absorbed", absorbed)
    decoder = Decoder(loaded, intervention=EVERYTHING)
    decoder.prefill(PROMPT)
    for _ in range(3):
        decoder.step()
    _assert_decoder_equals_uncached(loaded, decoder)
