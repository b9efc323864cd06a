"""A packed pass of prompts of several lengths that records its maps, or runs under an intervention, attends in
the same runs of causal squares as a plain one (fused_attention.in_squares): no score is formed over another
prompt's rows, and each prompt's logits and maps equal transformers' forward of it alone (under the same edit
made with hooks). Each prompt's records carry the MaskRule of its own pass (issue 25: the rule is carried to the
record, never guessed back from a dense mask), as do the captures of a packed attribution."""
from __future__ import annotations

import numpy as np
import pytest

import explorer
from explorer.core import attention, mla, packed, recording
from tests.api.test_match_hf import assert_matches
from tests.api.test_unequal_batches import LENGTHS, prompts
from tests.core import intervention_reference as ref

LONGEST = max(LENGTHS)
ABLATED, POSITIONS = (1, 2), [3, 9, 29]


@pytest.fixture
def score_shapes(monkeypatch) -> list[tuple]:
    """The shape of the scores S of every attention the model formed A from (attention.attend)."""
    shapes: list[tuple] = []
    original = attention.attend

    def attend(scores, *rest):
        shapes.append(tuple(scores.shape))
        return original(scores, *rest)

    monkeypatch.setattr(attention, "attend", attend)
    monkeypatch.setattr(mla, "attend", attend)
    return shapes


def in_squares(shapes: list[tuple]) -> bool:
    """Whether every score block stayed within one prompt: at most the longest prompt's rows and keys."""
    return bool(shapes) and all(shape[-2] <= LONGEST and shape[-1] <= LONGEST for shape in shapes)


@pytest.mark.parametrize("family", ["llama", "deepseek_v2"])
def test_a_recorded_batch_of_several_lengths_attends_in_squares_and_equals_transformers(
        family, hf_model, model, score_shapes):
    batch = prompts()
    runs = model.run(batch)                                                     # short prompts store their maps
    assert in_squares(score_shapes)
    assert (3, model.info.n_heads, 40, 40) in score_shapes                      # the three 40-token prompts at once
    for run in runs:
        assert_matches(run, hf_model)                                           # logits and every head's map


@pytest.mark.parametrize("family", ["llama", "deepseek_v2"])
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_a_batch_of_several_lengths_under_an_ablation_attends_in_squares_and_equals_the_hooked_model(
        family, mode, hf_model, model, score_shapes):
    batch = prompts()
    edit = explorer.Intervention().ablate(*ABLATED, mode, positions=POSITIONS)
    runs = model.run(batch, intervention=edit, record="logits")
    assert in_squares(score_shapes)
    for prompt, run in zip(batch, runs):
        inside = [p for p in POSITIONS if p < len(prompt)]                    # a 12-token prompt lacks position 29
        with ref.ablate_heads(hf_model, [ABLATED], model.info.n_heads, mode, inside):
            expected = ref.logits(hf_model, np.array(prompt)).numpy()
        assert np.abs(run.logits - expected).max() / np.abs(expected).max() < 1e-4
        plain = ref.logits(hf_model, np.array(prompt)).numpy()
        assert np.abs(run.logits - plain).max() > 1e-3                          # the ablation changed something


def same_rule(got, expected) -> bool:
    return (got is not None and got.kind == expected.kind and got.window == expected.window
            and np.array_equal(got.queries, expected.queries) and np.array_equal(got.keys, expected.keys))


def own_rule(model, n: int, layer: int):
    """The rule the pass of an n-token prompt alone makes in `layer` (StepContext.mask)."""
    window = getattr(model.loaded.model.layers[layer].attn, "window", None)
    return model.loaded.model.step_context(np.arange(n)).mask(np.arange(n), window).rule


@pytest.mark.parametrize("family", ["llama", "gemma3", "deepseek_v2"])
def test_a_packed_record_carries_the_rule_of_its_prompt_alone(family, model, monkeypatch):
    kept: list[tuple] = []
    original = recording.attention_record

    def keeping(captured, arrays, *rest, **shared):
        kept.append((len(captured.kv_positions), captured.rule))
        return original(captured, arrays, *rest, **shared)

    monkeypatch.setattr(recording, "attention_record", keeping)
    batch = prompts()
    model.run(batch)
    layers = model.loaded.config.n_layers
    assert len(kept) == len(batch) * layers
    for index, (n, rule) in enumerate(kept):                                    # each prompt's layers in order
        assert same_rule(rule, own_rule(model, n, index % layers)), (n, index % layers)
    lengths = [len(p) for p in batch]
    captures = packed.packed_captures(model.loaded, [np.array(p) for p in batch], [n - 1 for n in lengths])
    for n, capture in zip(lengths, captures):
        for layer, captured in enumerate(capture.layers):
            assert same_rule(captured.attn.rule, own_rule(model, n, layer)), (n, layer)
