"""Run.logit_diff: logit(target) − logit(against) at a position, read from the final state there and the two
rows of W_U only, against transformers' logits (a padded batch, under an ablation made with a hook on o_proj,
a soft-capped Gemma) and torch's own Transformer layers for an encoder-decoder; a batch recorded with
record="logits" and read for its differences makes no product over the vocabulary."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import explorer
from tests.api.test_batches import PROMPTS
from tests.api.test_record_logits import ablated_at_one_position, padded
from tests.core.conftest import FAMILIES, randomize

TARGET, AGAINST = 7, 42


def difference(logits: torch.Tensor) -> float:
    return float(logits[TARGET].double() - logits[AGAINST].double())


@pytest.fixture
def vocabulary_products(model, monkeypatch) -> list[int]:
    """The rows of each product h W_U over the whole vocabulary (Transformer.logits) the model makes."""
    seen: list[int] = []
    transformer = model.loaded.model
    original = transformer.logits

    def counting(hidden):
        seen.append(hidden.shape[0])
        return original(hidden)

    monkeypatch.setattr(transformer, "logits", counting)
    return seen


@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2", "deepseek_v2"])
def test_a_logits_batch_read_for_its_differences_equals_transformers_without_a_vocabulary_product(
        family, hf_model, model, vocabulary_products):
    ids, mask = padded(PROMPTS)
    with torch.inference_mode():
        expected = hf_model(ids, attention_mask=mask).logits
    runs = model.run(PROMPTS, record="logits")
    for row, (prompt, run) in enumerate(zip(PROMPTS, runs)):
        last = len(prompt) - 1
        assert run.logit_diff(TARGET, AGAINST) == pytest.approx(difference(expected[row, last]), abs=1e-4)
        assert run.logit_diff(TARGET, AGAINST, position=1) == pytest.approx(difference(expected[row, 1]), abs=1e-4)
        assert run.logit_diff(TARGET, AGAINST, position=-2) == pytest.approx(difference(expected[row, last - 1]),
                                                                             abs=1e-4)
    assert vocabulary_products == []                      # neither the pass nor a difference read all of W_U
    assert all(run.decoder.pending for run in runs)       # and no run made its KV cache, trace or candidates


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_differences_under_an_ablation_at_one_position_equal_the_hooked_transformers(family, hf_model, model):
    edit, expected = ablated_at_one_position(hf_model, PROMPTS, layer=1, head=2, position=5)
    for row, (prompt, run) in enumerate(zip(PROMPTS, model.run(PROMPTS, intervention=edit, record="logits"))):
        assert run.logit_diff(TARGET, AGAINST) == pytest.approx(difference(expected[row, len(prompt) - 1]), abs=1e-4)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_a_recorded_run_that_stepped_on_reads_each_position_as_transformers(family, hf_model, model):
    batch = model.run(PROMPTS[:2], steps=2)                               # packed prefill, then its own steps
    alone = model.run(PROMPTS[2], steps=3)
    for run in (*batch, alone):
        with torch.inference_mode():
            expected = hf_model(torch.tensor([run.ids.tolist()])).logits[0]
        for position in range(len(run.ids)):
            assert run.logit_diff(TARGET, AGAINST, position) == pytest.approx(difference(expected[position]),
                                                                              abs=1e-4)
    alone.back()
    with torch.inference_mode():
        expected = hf_model(torch.tensor([alone.ids.tolist()])).logits[0, -1]
    assert alone.logit_diff(TARGET, AGAINST) == pytest.approx(difference(expected), abs=1e-4)


def test_a_soft_capped_model_reads_its_capped_logits():
    _, name, kwargs = FAMILIES["gemma3"]
    config = transformers.Gemma3TextConfig(**kwargs, final_logit_softcapping=3.0)
    torch.manual_seed(0)
    hf_model = getattr(transformers, name)._from_config(config, attn_implementation="eager")
    randomize(hf_model, 0)
    from explorer.core.runtime import from_tensors

    model = explorer.Model(from_tensors(hf_model.eval().config.to_dict(), hf_model.state_dict(), name="tiny-capped"))
    assert model.loaded.config.final_softcap == 3.0
    prompt = PROMPTS[0]
    with torch.inference_mode():
        expected = hf_model(torch.tensor([prompt])).logits[0]
    assert float(expected.abs().max()) <= 3.0                              # capped: c tanh(z / c)
    runs = model.run([prompt, PROMPTS[3]], record="logits")
    assert runs[0].logit_diff(TARGET, AGAINST) == pytest.approx(difference(expected[-1]), abs=1e-4)
    corrupt = PROMPTS[0][::-1]
    with torch.inference_mode():
        expected_corrupt = hf_model(torch.tensor([corrupt])).logits[0, -1]
    maps = model.patch(prompt, corrupt, TARGET, AGAINST)                   # the patching metric reads two rows too
    assert maps.clean == pytest.approx(difference(expected[-1]), abs=1e-4)
    assert maps.corrupt == pytest.approx(difference(expected_corrupt), abs=1e-4)


def test_an_encoder_decoder_reads_its_differences_as_torchs_layers():
    from tests.core.test_encdec_reference import random_model, reference

    loaded = random_model(5)
    source = np.array([3, 17, 8, 22, 5, 9, 30])
    run = explorer.Model(loaded).run(source, steps=3)
    expected, _ = reference(loaded.model, source, run.ids)
    target, against = 4, 9
    for position in range(len(run.ids)):
        assert run.logit_diff(target, against, position) == pytest.approx(
            float(expected[position, target]) - float(expected[position, against]), abs=1e-4)


@pytest.mark.parametrize("family", ["llama"])
def test_a_wrong_target_or_position_is_one_sentence(family, model):
    run = model.run(PROMPTS[:2], record="logits")[1]
    for call, message in ((lambda: run.logit_diff(TARGET, AGAINST, position=3), "position 3 is out of range"),
                          (lambda: run.logit_diff(TARGET, AGAINST, position=-4), "position -1 is out of range"),
                          (lambda: run.logit_diff(TARGET, AGAINST, position=1.0), "position must be an integer"),
                          (lambda: run.logit_diff(10_000, AGAINST), "target 10000 is outside the vocabulary"),
                          (lambda: run.logit_diff(TARGET, [AGAINST]), "against must be a string or a token id")):
        with pytest.raises(explorer.ExplorerError, match=message):
            call()


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_a_batch_attribution_keeps_only_each_prompts_row_and_equals_transformers(family, hf_model, model,
                                                                                  monkeypatch):
    from explorer.core import logit_difference

    kept = []
    original = logit_difference.packed_captures

    def spying(*args, **kwargs):
        captures = original(*args, **kwargs)
        kept.extend(captures)
        return captures

    monkeypatch.setattr(logit_difference, "packed_captures", spying)
    prompts = [PROMPTS[0], PROMPTS[2], PROMPTS[3]]
    parts = model.attribute(prompts, target=TARGET, against=AGAINST, position=[4, None, -1])
    for prompt, position, part in zip(prompts, [4, len(PROMPTS[2]) - 1, len(PROMPTS[3]) - 1], parts):
        with torch.inference_mode():
            expected = hf_model(torch.tensor([prompt])).logits[0, position]
        assert part.difference == pytest.approx(difference(expected), abs=1e-4)
        assert part.total() == pytest.approx(part.difference, abs=1e-4)
    assert len(kept) == len(prompts)
    for capture in kept:                                  # one row of what the readout needs, nothing else
        for layer in capture.layers:
            assert layer.residual.shape[0] == layer.ffn_out.shape[0] == layer.attn.head_out.shape[1] == 1
            assert layer.x is None and layer.attn_out is None and layer.attn.q is None
