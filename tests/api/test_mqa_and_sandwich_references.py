"""Checks against transformers with its own hooks that the other families already had: a Q, K or V patch of
multi-query attention (one K/V head shared by every query head), alone and in a batch of several lengths, a path
patch into its Q, K or V (tests/core/test_intervention_sites.py's hooks), and each part of gemma3's attribution
of a logit difference through its sandwich norms (each head through its layer's post-attention norm and the
final norm, both scales frozen at the position), not only their sum."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from tests.api.test_match_hf import PROMPT
from tests.api.test_research import AGAINST, TARGET
from tests.api.test_unequal_batches import prompts
from tests.core import intervention_reference as ref

RNG = np.random.default_rng(24)


def relative(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize("family", ["llama_mqa"])
@pytest.mark.parametrize("which, head", [("q", 3), ("k", 0), ("v", 0)])   # the one K/V head every query head reads
def test_an_mqa_q_k_or_v_patch_matches_a_hook_on_the_projection(family, which, head, hf_model, model):
    assert model.info.n_kv_heads == 1
    module, cols = ref.projection_columns(hf_model, 1, which, head)
    d_head = model.info.d_v if which == "v" else model.info.d_qk
    values = RNG.normal(size=(4, d_head)).astype(np.float32)
    edit = getattr(explorer.Intervention(), f"patch_{which}")(1, head, values, start=6)
    batch = [PROMPT] + prompts()
    runs = model.run(batch, intervention=edit, record="logits")                # packed: the alone one and a batch
    alone = model.run(PROMPT, intervention=edit, record="logits")
    for prompt, run in zip(batch, runs):
        with ref.patch_output(module, values, 6, cols):
            expected = ref.logits(hf_model, np.array(prompt)).numpy()
        assert relative(run.logits, expected) < 1e-4
        assert np.abs(run.logits - ref.logits(hf_model, np.array(prompt)).numpy()).max() > 1e-3   # it changed
    np.testing.assert_allclose(alone.logits, runs[0].logits, rtol=1e-4, atol=1e-4 * np.abs(alone.logits).max())


def gemma_scale(norm, x: torch.Tensor) -> torch.Tensor:
    """Gemma's RMSNorm frozen at x: Norm(y) = y * (1 + w) / rms(x), as the vector (1 + w) / rms(x)."""
    return (1.0 + norm.weight.detach().double()) / torch.sqrt((x * x).mean() + norm.eps)


@pytest.mark.parametrize("family", ["gemma3"])
def test_each_part_of_a_gemma3_logit_difference_is_the_hooked_reference(family, hf_model, model):
    position = 6
    parts = model.attribute(PROMPT, target=TARGET, against=AGAINST, position=position)
    blocks, final = list(hf_model.model.layers), hf_model.model.norm
    kept = {"final": [], "attn": [], "mlp": []}                          # at `position`: norm inputs, FFN as added
    heads, recording = ref.record_head_inputs(hf_model)                   # concat_h O_h entering each W^O
    handles = [final.register_forward_pre_hook(lambda m, a: kept["final"].append(a[0][0, position]))]
    handles += [b.post_attention_layernorm.register_forward_pre_hook(
        lambda m, a: kept["attn"].append(a[0][0, position])) for b in blocks]
    handles += [b.post_feedforward_layernorm.register_forward_hook(
        lambda m, a, out: kept["mlp"].append(out[0, position])) for b in blocks]
    with recording, ref.hooks(handles), torch.inference_mode():
        out = hf_model(torch.as_tensor(PROMPT)[None], output_hidden_states=True)
    logits = out.logits[0, position].double()
    assert parts.difference == pytest.approx(float(logits[TARGET] - logits[AGAINST]), abs=1e-4)
    w_u = hf_model.lm_head.weight.detach().double()
    u = (w_u[TARGET] - w_u[AGAINST]) * gemma_scale(final, kept["final"][0].double())   # D = u . h_L, frozen
    assert parts.embed == pytest.approx(float(u @ out.hidden_states[0][0, position].double()), abs=1e-4)
    n_heads = model.info.n_heads
    for layer, block in enumerate(blocks):
        o_proj = block.self_attn.o_proj.weight.detach().double()                        # (d, H d_v)
        d_v = o_proj.shape[1] // n_heads
        through = u * gemma_scale(block.post_attention_layernorm, kept["attn"][layer].double())
        for head in range(n_heads):
            cols = slice(head * d_v, (head + 1) * d_v)
            expected = float(through @ (o_proj[:, cols] @ heads[layer][0, position, cols].double()))
            assert parts.heads[layer, head] == pytest.approx(expected, abs=1e-4), (layer, head)
        assert parts.mlp[layer] == pytest.approx(float(u @ kept["mlp"][layer].double()), abs=1e-4)
    assert parts.rest == pytest.approx(0.0, abs=1e-4)                    # gemma3 has no biases
    assert parts.total() == pytest.approx(parts.difference, abs=1e-4)


@pytest.mark.parametrize("family", ["llama_mqa"])
@pytest.mark.parametrize("which, receiver_head", [("q", 3), ("k", 0), ("v", 0)])   # K, V: the one key-value head
def test_an_mqa_path_patch_matches_hooks_that_feed_one_receiver(family, which, receiver_head, hf_model, model):
    from tests.core.test_intervention_sites import IDS, path_reference

    n_heads = model.info.n_heads
    kept, recording = ref.record_head_inputs(hf_model)
    with recording:
        ref.logits(hf_model, RNG.integers(0, model.info.vocab_size, size=len(IDS)))
    clean_heads = kept[0][0]                                                   # (T, H d_v) entering layer 0's W^O
    with path_reference(hf_model, (0, 2), (1, receiver_head), which, clean_heads, n_heads):
        expected = ref.logits(hf_model, IDS).numpy()
    d_v = clean_heads.shape[-1] // n_heads
    values = clean_heads[:, 2 * d_v: 3 * d_v].numpy()
    run = model.run(IDS, intervention=explorer.Intervention().patch_path((0, 2), (1, receiver_head), which, values))
    assert relative(run.logits, expected) < 1e-4
    assert np.abs(run.logits - ref.logits(hf_model, IDS).numpy()).max() > 1e-3              # it changed
