"""A batch under a pattern patch is one packed pass: each patched row is written over its own prompt's keys
(the other prompts' keys keep weight 0), so each run, and each prompt's attribution, equals its prompt's run
alone and transformers with the same rows written into its attention weights."""
from __future__ import annotations

import numpy as np
import pytest

import explorer
from explorer.core import packed
from tests.api.test_batches import PROMPTS, assert_same_run, close
from tests.core import intervention_reference as ref

LAYER, HEAD, START = 1, 1, 2


def pattern_rows(width: int) -> np.ndarray:
    """Two rows of weights over `width` keys, each summing to 1 (a pattern as a softmax would give)."""
    rows = np.random.default_rng(3).random((2, width)).astype(np.float32)
    return rows / rows.sum(-1, keepdims=True)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_a_batch_under_a_pattern_patch_is_one_packed_pass_equal_to_each_alone_and_to_transformers(
        family, hf_model, model, passes):
    rows = pattern_rows(max(len(p) for p in PROMPTS) + 1)                      # the step reads one key more
    edit = explorer.Intervention().patch_pattern(LAYER, HEAD, rows, start=START)
    runs = model.run(PROMPTS, steps=1, intervention=edit)
    assert passes == [len(PROMPTS)]
    for prompt, run in zip(PROMPTS, runs):
        t = len(prompt)
        assert_same_run(run, model.run(prompt, steps=1, intervention=edit))
        mine = rows[: t - START, :t]                                            # this prompt's rows and keys
        with ref.registered_attention(hf_model, patterns={LAYER: (HEAD, mine, START)}):
            expected = ref.logits(hf_model, np.array(prompt))
        assert close(run.logits[:t], expected.numpy(), rtol=1e-4)
        queries, keys = np.arange(START, START + len(mine))[:, None], np.arange(t)[None, :]
        shown = np.where(keys <= queries, mine, 0.0)                               # a map shows the causal part
        assert close(run.attention(LAYER, HEAD)[START: START + len(mine), :t], shown)


@pytest.mark.parametrize("family", ["llama"])
def test_the_attribution_of_a_batch_under_a_pattern_patch_is_packed_and_equals_each_alone(family, model,
                                                                                          monkeypatch):
    calls = []
    original = packed._captures_of_pass
    monkeypatch.setattr(packed, "_captures_of_pass", lambda loaded, cut, *rest: calls.append(len(cut))
                        or original(loaded, cut, *rest))
    edit = explorer.Intervention().patch_pattern(LAYER, HEAD, pattern_rows(max(len(p) for p in PROMPTS)),
                                                 start=START)
    targets, againsts = [7, 3, 50, 11], [42, 9, 2, 12]
    parts = model.attribute(PROMPTS, target=targets, against=againsts, intervention=edit)
    assert calls == [len(PROMPTS)]
    for prompt, t, a, part in zip(PROMPTS, targets, againsts, parts):
        alone = model.attribute(prompt, target=t, against=a, intervention=edit)
        assert part.difference == pytest.approx(alone.difference, abs=1e-4)
        np.testing.assert_allclose(part.heads, alone.heads, atol=1e-4)
        np.testing.assert_allclose(part.mlp, alone.mlp, atol=1e-4)
