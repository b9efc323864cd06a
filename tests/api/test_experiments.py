"""The experiment keywords of Model.run and the explain calls, checked against independent arithmetic."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import explorer
from tests.api.test_match_hf import PROMPT, reference


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_ablating_a_head_is_zeroing_its_columns_of_w_o_in_transformers(family, hf_model, model):
    """ablate=[(l, h)] zeroes O_h before W^O: in transformers, the columns of o_proj that read head h."""
    run = model.run(PROMPT, steps=0, ablate=[(1, 2)])
    ablated = copy.deepcopy(hf_model)                        # the engine may share the reference's tensors
    d_head = hf_model.config.hidden_size // hf_model.config.num_attention_heads
    with torch.no_grad():
        ablated.model.layers[1].self_attn.o_proj.weight[:, 2 * d_head: 3 * d_head] = 0.0
    ref_logits, _ = reference(ablated, run.ids)
    assert np.abs(run.logits - ref_logits).max() / np.abs(ref_logits).max() < 1e-4
    plain = model.run(PROMPT, steps=0)
    assert np.abs(plain.logits - ref_logits).max() / np.abs(ref_logits).max() > 1e-3   # it changed something


def test_a_relu_kernel_in_one_layer(bundled):
    """kernel="relu" in layer 3: A = Z⁻¹ max(0, S) over the visible keys there, softmax elsewhere."""
    run = bundled.run("To be, or not to be", kernel="relu", kernel_layers=[3])
    for head in (0, 4):
        scores, mask = run.trace.scores(3, head), run.trace.mask(3)            # S from the recorded Q and K
        kept = np.where(mask, np.maximum(scores, 0.0), 0.0)
        np.testing.assert_allclose(run.attention(3, head), kept / kept.sum(-1, keepdims=True), atol=1e-6)
    scores = run.trace.scores(2, 1).astype(np.float64)
    softmax = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(run.attention(2, 1), softmax / softmax.sum(-1, keepdims=True), atol=1e-6)


def test_attribution_sums_to_the_logit(bundled):
    run = bundled.run("To be, or not to be", steps=1)
    parts = run.attribute(position=len(run.ids) - 2)
    assert parts.token_id == run.ids[-1]                                        # greedy: the top prediction
    assert parts.logit == pytest.approx(float(run.logits[-2, parts.token_id]), abs=1e-4)
    assert parts.total() == pytest.approx(parts.logit, abs=1e-4)


def test_head_scores_are_the_attention_to_the_previous_token(bundled):
    ids = list(range(20, 44))
    scores = bundled.heads(ids=ids, repeat=2)
    run = bundled.run(ids * 2)
    n = len(ids)
    for layer, head in [(0, 0), (2, 3)]:
        weights = run.attention(layer, head)
        previous = np.mean([weights[i, i - 1] for i in range(1, 2 * n)])
        induction = np.mean([weights[i, i - n + 1] for i in range(n, 2 * n)])
        assert scores.previous_token[layer, head] == pytest.approx(previous, abs=1e-5)
        assert scores.induction[layer, head] == pytest.approx(induction, abs=1e-5)


def test_patching_the_one_changed_position_restores_the_clean_run(bundled):
    """Clean and corrupted prompts differ at position 1 only: the residual entering layer 0 there, taken from
    the clean run, makes the corrupted run the clean one; any other position changes nothing at layer 0."""
    clean, corrupt = "To be, or not to be", "To go, or not to be"
    result = bundled.patch(clean, corrupt, target=" the", against=" a", site="resid")
    the, a = (bundled.loaded.tokenizer.encode(t).ids[0] for t in (" the", " a"))
    for text, value in ((clean, result.clean), (corrupt, result.corrupt)):
        logits = bundled.run(text).logits[-1]
        assert value == pytest.approx(float(logits[the] - logits[a]), abs=1e-4)
    assert result.values.shape == (bundled.info.n_layers, 7)
    assert result.values[0, 1] == pytest.approx(result.clean, abs=1e-4)
    np.testing.assert_allclose(result.values[0, 2:], result.corrupt, atol=1e-4)
    with pytest.raises(explorer.ExplorerError, match="same number"):
        bundled.patch(clean, "To be", target=" the", against=" a")
