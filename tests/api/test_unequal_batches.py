"""A packed pass of prompts of several lengths, where the S x S block mask would cost more than one call per run
of prompts of one length, takes its prompts by length and its fused attention as one batch of causal squares
per run (fused_attention._runs): each run's logits, and each prompt's logit difference, equal transformers' forward
of that prompt alone, and each prompt's attribution equals its attribution alone."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core import fused_attention
from tests.api.test_batches import close
from tests.core import intervention_reference as ref

LENGTHS = [30, 40, 12, 30, 40, 40]           # S = 192: 36,864 masked entries against 6,744 in 3 runs
RUNS = ((1, 12), (2, 30), (3, 40))           # the pass takes its prompts by length (pass_budget.by_length)
WINDOWED = {"mistral", "gemma3"}             # a window of 5: no layer (mistral) or half of them (gemma3) is causal


def prompts() -> list[list[int]]:
    rng = np.random.default_rng(5)
    return [rng.integers(1, 90, n).tolist() for n in LENGTHS]


@pytest.fixture
def runs_taken(monkeypatch) -> list[tuple]:
    """The runs of each fused attention call that took them."""
    taken: list[tuple] = []
    original = fused_attention._fused_runs
    monkeypatch.setattr(fused_attention, "_fused_runs",
                        lambda q, k, v, runs, scale: taken.append(runs) or original(q, k, v, runs, scale))
    return taken


@pytest.mark.parametrize("family", ["llama", "llama_mqa", "mistral", "qwen2", "qwen3", "gpt2", "gemma3"])
def test_a_batch_of_several_lengths_runs_in_causal_squares_and_equals_transformers_on_each_prompt(
        family, hf_model, model, runs_taken):
    batch = prompts()
    runs = model.run(batch, record="logits")
    layers = model.loaded.config.n_layers
    causal = 0 if family == "mistral" else layers // 2 if family == "gemma3" else layers
    assert runs_taken == [RUNS] * causal
    for prompt, run in zip(batch, runs):
        assert close(run.logits, ref.logits(hf_model, np.array(prompt)).numpy(), rtol=1e-4)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_the_attribution_of_a_batch_of_several_lengths_equals_transformers_and_each_alone(
        family, hf_model, model, runs_taken):
    batch = prompts()
    targets, againsts = [7, 3, 50, 11, 60, 2], [42, 9, 2, 12, 1, 80]
    parts = model.attribute(batch, target=targets, against=againsts)
    assert RUNS in runs_taken
    for prompt, t, a, part in zip(batch, targets, againsts, parts):
        last = ref.logits(hf_model, np.array(prompt))[-1].numpy()
        scale = max(1.0, float(np.abs(last).max()))
        assert part.difference == pytest.approx(float(last[t] - last[a]), abs=1e-4 * scale)
        alone = model.attribute(prompt, target=t, against=a)
        np.testing.assert_allclose(part.heads, alone.heads, atol=1e-4)
        np.testing.assert_allclose(part.mlp, alone.mlp, atol=1e-4)
        assert part.embed == pytest.approx(alone.embed, abs=1e-4)
