"""`memory=` on run, patch and heads: one budget (pass_budget.budget_of), checked alike; a budget too small for
the batch's passes cuts them into more and smaller passes, and the results stay those of the whole pass."""
from __future__ import annotations

import numpy as np
import pytest

import explorer
from explorer.core import packed, pass_budget, patching
from tests.api.test_batches import PROMPTS, close


@pytest.fixture
def capture_passes(monkeypatch) -> list[int]:
    """The number of prompts in each packed pass of captures (the clean and corrupted runs of patching)."""
    seen: list[int] = []
    original = packed._captures_of_pass
    monkeypatch.setattr(packed, "_captures_of_pass",
                        lambda loaded, cut, *rest: seen.append(len(cut)) or original(loaded, cut, *rest))
    return seen


@pytest.fixture
def site_passes(monkeypatch) -> list[int]:
    """The number of patched sequences in each site pass of patching."""
    seen: list[int] = []
    original = patching._patched
    monkeypatch.setattr(patching, "_patched", lambda *args: seen.append(len(args[1])) or original(*args))
    return seen


@pytest.mark.parametrize("family", ["llama"])
def test_a_tiny_budget_splits_the_patching_passes_and_leaves_the_maps_unchanged(family, model, capture_passes,
                                                                                site_passes):
    cleans = [PROMPTS[0], PROMPTS[1], PROMPTS[3]]
    corrupts = [clean[::-1] for clean in cleans]
    whole = model.patch(cleans, corrupts, target=[7, 3, 5], against=42)
    assert capture_passes == [6] and max(site_passes) > 1                # one pass of captures, sites side by side
    capture_passes.clear()
    passes_before = len(site_passes)
    tiny = model.patch(cleans, corrupts, target=[7, 3, 5], against=42, memory=1)
    assert capture_passes == [1] * 6                                      # each prompt its own pass
    assert set(site_passes[passes_before:]) == {1}                        # each site its own pass
    for ours, theirs in zip(tiny.maps, whole.maps):
        assert close(ours.values, theirs.values)
        assert ours.clean == pytest.approx(theirs.clean, abs=1e-5)
        assert ours.corrupt == pytest.approx(theirs.corrupt, abs=1e-5)
    assert close(tiny.mean.values, whole.mean.values)


@pytest.mark.parametrize("family", ["llama"])
def test_a_budget_of_two_prompts_packs_two_captures_to_a_pass(family, model, capture_passes):
    cleans, corrupts = [PROMPTS[1], PROMPTS[3]], [PROMPTS[1][::-1], PROMPTS[3][::-1]]
    two = pass_budget.pass_bytes(model.loaded.config, [len(PROMPTS[1])] * 2, weights=False)
    model.patch(cleans, corrupts, target=7, against=42, memory=two)
    assert capture_passes == [2, 1, 1]                                   # 3 + 3 fit; 6 + 6 do not, nor 3 + 6


@pytest.mark.parametrize("family", ["llama"])
def test_a_tiny_budget_splits_the_head_scores_and_leaves_them_unchanged(family, model, monkeypatch):
    seen: list[int] = []
    original = packed._packed_pass
    monkeypatch.setattr(packed, "_packed_pass", lambda loaded, decoders, prompts, *rest: seen.append(len(prompts))
                        or original(loaded, decoders, prompts, *rest))
    sequences = [PROMPTS[0], PROMPTS[1], PROMPTS[3]]
    whole = model.heads(sequences, repeat=2)
    assert seen == [3]
    tiny = model.heads(sequences, repeat=2, memory=1)
    assert seen == [3]                                                    # no packed pass: each sequence alone
    for name in ("previous_token", "induction", "sink"):
        assert close(getattr(tiny, name), getattr(whole, name)), name


@pytest.mark.parametrize("family", ["llama"])
def test_rows_within_is_the_most_rows_whose_pass_fits(family, model):
    config = model.loaded.config
    for budget in (1, pass_budget.pass_bytes(config, [40], weights=False), 10 ** 7):
        rows = pass_budget.rows_within(config, budget)
        assert rows == 1 or pass_budget.pass_bytes(config, [rows], weights=False) <= budget
        assert rows == pass_budget.PASS_ROWS or pass_budget.pass_bytes(config, [rows + 1], weights=False) > budget
    assert pass_budget.rows_within(config, pass_budget.pass_bytes(config, [40], weights=False)) == 40


@pytest.mark.parametrize("family", ["llama"])
def test_a_wrong_memory_budget_is_the_same_sentence_for_run_patch_and_heads(family, model):
    for wrong in ("1GB", 0, -5, True, 1.5):
        for call in (lambda: model.run(PROMPTS, memory=wrong),
                     lambda: model.patch(PROMPTS[:2], PROMPTS[:2], target=7, against=42, memory=wrong),
                     lambda: model.patch(PROMPTS[0], PROMPTS[0], target=7, against=42, memory=wrong),
                     lambda: model.heads(PROMPTS[:2], memory=wrong),
                     lambda: model.heads(PROMPTS[0], memory=wrong)):
            with pytest.raises(explorer.ExplorerError, match=r"^memory=.* must be a number of bytes, 1 or more$"):
                call()
    assert isinstance(model.heads(PROMPTS[:2], memory=np.int64(1 << 30)).induction, np.ndarray)
