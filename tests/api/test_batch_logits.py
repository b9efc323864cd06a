"""A batch's logits: the runs of one packed pass read their rows of one product h W_U over the pass (W_U read
once, as transformers' batched forward reads it), each equal to its prompt's run alone within 1e-5 and to
transformers' padded batch within 1e-4; where the budget does not hold the product, each run makes its own."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core import packed, pass_budget
from tests.api.test_batches import PROMPTS, close


@pytest.fixture
def products(model, monkeypatch) -> list[int]:
    """The rows of each h W_U product the model makes."""
    seen: list[int] = []
    original = model.loaded.model.logits

    def counting(hidden):
        seen.append(len(hidden))
        return original(hidden)

    monkeypatch.setattr(model.loaded.model, "logits", counting)
    return seen


def padded_logits(hf_model) -> torch.Tensor:
    """transformers' logits of PROMPTS as one batch, right-padded under an attention mask: (B, T_max, V)."""
    longest = max(len(p) for p in PROMPTS)
    ids = torch.tensor([p + [0] * (longest - len(p)) for p in PROMPTS])
    mask = torch.tensor([[1] * len(p) + [0] * (longest - len(p)) for p in PROMPTS])
    with torch.inference_mode():
        return hf_model(ids, attention_mask=mask).logits


@pytest.mark.parametrize("family", ["llama", "gemma3", "gpt2"])
def test_the_runs_of_a_batch_read_their_logits_from_one_product(family, hf_model, model, products):
    runs = model.run(PROMPTS)
    products.clear()                                       # the prefill's next-token rows are its own product
    logits = [run.logits for run in runs]
    assert products == [sum(len(p) for p in PROMPTS)]      # one product over every row of the pass
    theirs = padded_logits(hf_model)
    for row, (prompt, ours) in enumerate(zip(PROMPTS, logits)):
        assert close(ours, model.run(prompt).logits)
        assert close(ours, theirs[row, : len(prompt)].numpy(), rtol=1e-4)


@pytest.mark.parametrize("family", ["llama"])
def test_the_shared_product_is_let_go_and_later_steps_make_their_own(family, model, products):
    runs = model.run(PROMPTS)
    shared = runs[0].decoder._shared[0]
    first = [run.logits for run in runs]
    assert shared._logits is None and shared.hidden is None              # every run took its rows
    runs[1].step(2)                                                      # the prefill's rows again, and 2 more
    alone = model.run(PROMPTS[1], steps=2)
    assert close(runs[1].logits, alone.logits)
    assert close(runs[1].logits[: len(PROMPTS[1])], first[1])            # now its own product of those rows
    runs[1].back().back()
    assert close(runs[1].logits, first[1])


@pytest.mark.parametrize("family", ["llama"])
def test_without_room_for_the_product_each_run_makes_its_own(family, model, products, monkeypatch):
    monkeypatch.setattr(packed, "shares_logits", lambda config, rows, budget: False)
    runs = model.run(PROMPTS)
    products.clear()
    logits = [run.logits for run in runs]
    assert products == [len(p) for p in PROMPTS]
    for prompt, ours in zip(PROMPTS, logits):
        assert close(ours, model.run(prompt).logits)


@pytest.mark.parametrize("family", ["llama"])
def test_the_product_is_shared_only_where_the_budget_holds_it(family, model):
    config = model.loaded.config
    rows = sum(len(p) for p in PROMPTS)
    exact = rows * config.vocab_size * np.dtype(np.float32).itemsize     # the (S, V) float32 product
    assert pass_budget.shares_logits(config, rows, exact) and not pass_budget.shares_logits(config, rows, exact - 1)
