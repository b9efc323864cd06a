"""A batch of an encoder-only model's runs (BERT, MiniLM): one right-padded pass whose padding keys the
attention mask hides, each run equal to its prompt's run alone and to transformers' BertModel on the same
padded batch, its hidden states read with hooks on each layer."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from explorer.core import encoder
from explorer.core.runtime import LoadedModel
from tests.core.test_encoder import tiny_bert

PROMPTS = [[5, 17, 33, 2, 71, 40, 9, 88, 23, 61, 14], [7, 8, 9], list(range(10, 31)), [60, 2, 90, 31, 31, 8]]


def close(got: np.ndarray, expected: np.ndarray, rtol: float = 1e-5) -> bool:
    """Equal within rtol of the largest |expected| (float rounding of another matmul order)."""
    assert got.shape == expected.shape, (got.shape, expected.shape)
    return float(np.abs(got - expected).max()) <= rtol * max(float(np.abs(expected).max()), 1.0)


def tiny_model(hf_model) -> explorer.Model:
    built, config = encoder.build(hf_model.config.to_dict(), hf_model.state_dict(), source="tiny-bert")
    return explorer.Model(LoadedModel(model=built, config=config, tokenizer=None,
                                      info=encoder.model_info(built, config, "tiny-bert"), name="tiny-bert"))


@pytest.fixture
def padded_passes(monkeypatch) -> list[int]:
    """The number of prompts in each padded pass a batch takes."""
    seen: list[int] = []
    original = encoder.prefill_padded

    def counting(runners, prompts):
        seen.append(len(prompts))
        return original(runners, prompts)

    monkeypatch.setattr(encoder, "prefill_padded", counting)
    return seen


def hooked_layers(hf_model, ids: torch.Tensor, mask: torch.Tensor) -> tuple[list[np.ndarray], tuple]:
    """Each BertLayer's input and output (B, S, d) read by hooks, and the attention maps, of a padded batch."""
    outputs: list[np.ndarray] = []
    handles = [layer.register_forward_hook(lambda _m, inputs, out: outputs.append((
        inputs[0].detach().numpy().copy(), (out[0] if isinstance(out, tuple) else out).detach().numpy().copy())))
        for layer in hf_model.encoder.layer]
    try:
        with torch.inference_mode():
            maps = hf_model(ids, attention_mask=mask, output_attentions=True).attentions
    finally:
        for handle in handles:
            handle.remove()
    return outputs, maps


def padded(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    longest = max(len(p) for p in prompts)
    ids = torch.tensor([p + [0] * (longest - len(p)) for p in prompts])
    mask = torch.tensor([[1] * len(p) + [0] * (longest - len(p)) for p in prompts])
    return ids, mask


def assert_layer_equals_hooked(run, layer: int, hooked: tuple[np.ndarray, np.ndarray], row: int, t: int) -> None:
    """The block's input X and the norm of its output ||h|| equal the hooked BertLayer's, in the batch's row."""
    record = run.trace.steps[0].layers[layer]
    block_in, block_out = hooked
    assert close(record.x, block_in[row, :t], rtol=1e-4), (row, layer)
    assert close(record.residual_norm, np.linalg.norm(block_out[row, :t], axis=-1), rtol=1e-4), (row, layer)


def assert_same_run(run, alone) -> None:
    """Trace, maps and activations of `run` equal those of its prompt's run alone."""
    assert run.ids.tolist() == alone.ids.tolist() and run.trace.n_steps == alone.trace.n_steps == 1
    info = alone.trace.model
    for layer in range(info.n_layers):
        ours, theirs = run.trace.steps[0].layers[layer], alone.trace.steps[0].layers[layer]
        for name in ("q", "k", "v"):
            assert close(getattr(ours.attn, name), getattr(theirs.attn, name)), (layer, name)
        np.testing.assert_array_equal(ours.attn.mask, theirs.attn.mask)
        assert close(ours.x, theirs.x) and close(ours.residual_norm, theirs.residual_norm), layer
        for head in range(info.n_heads):
            assert close(run.attention(layer, head), alone.attention(layer, head)), (layer, head)


@pytest.mark.parametrize("seed", [0, 1])
def test_an_encoder_batch_is_one_padded_pass_and_each_run_equals_its_run_alone(seed, padded_passes):
    model = tiny_model(tiny_bert(seed))
    seen = []
    runs = model.run(PROMPTS, progress=lambda done, total: seen.append((done, total)))
    assert padded_passes == [len(PROMPTS)]
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt))


def test_an_encoder_batch_equals_transformers_padded_batch_read_with_hooks():
    hf_model = tiny_bert(2)
    model = tiny_model(hf_model)
    ids, mask = padded(PROMPTS)
    layers, maps = hooked_layers(hf_model, ids, mask)
    for row, (prompt, run) in enumerate(zip(PROMPTS, model.run(PROMPTS))):
        t = len(prompt)
        for layer in range(len(layers)):
            assert_layer_equals_hooked(run, layer, layers[layer], row, t)
            for head in range(maps[layer].shape[1]):
                assert close(run.attention(layer, head), maps[layer][row, head, :t, :t].numpy(), rtol=1e-4)


def test_a_batch_too_large_for_its_memory_is_cut_into_padded_passes_that_fit(padded_passes):
    model = tiny_model(tiny_bert(3))
    one = encoder.padded_bytes(model.loaded.config, [len(PROMPTS[0]), len(PROMPTS[1])])
    runs = model.run(PROMPTS, memory=one)
    assert sum(padded_passes) == len(PROMPTS) and max(padded_passes) <= 2 and len(padded_passes) >= 2
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt))


def every_kind(info, width: int, where: str = "self") -> explorer.Intervention:
    """An intervention of every kind an encoder's attention takes: mean and zero ablations (at chosen
    positions), a kernel, a hidden entry, a head patch and a pattern patch over `width` keys."""
    rng = np.random.default_rng(9)
    rows = rng.random((2, width)).astype(np.float32)
    return (explorer.Intervention().ablate(1, 2, mode="mean", where=where)
            .ablate(0, 0, mode="mean", positions=[1, 2], where=where).ablate(0, 1, positions=[0], where=where)
            .kernel("relu", layers=[1], where=where).hide(0, query=2, where=where)
            .patch_head(1, 0, rng.normal(size=(2, info.d_v)).astype(np.float32), start=1, where=where)
            .patch_pattern(0, 2, rows / rows.sum(-1, keepdims=True), start=1, where=where))


def test_an_intervened_encoder_batch_is_one_padded_pass_equal_to_each_prompt_alone(padded_passes):
    model = tiny_model(tiny_bert(4))
    intervention = every_kind(model.info, max(len(p) for p in PROMPTS))
    runs = model.run(PROMPTS, intervention=intervention)
    assert padded_passes == [len(PROMPTS)]      # each mean over its prompt's rows, patterns off the padding
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt, intervention=intervention))


@pytest.mark.realmodel
def test_minilm_batch_equals_transformers_padded_batch_and_the_runs_alone(minilm_folder):
    import transformers

    model = explorer.load(minilm_folder)
    texts = ["The cat sat on the mat.", "A much longer sentence, with a comma, about a dog that barked at it.",
             "Hi"]
    runs = model.run(texts)
    ids = [run.ids.tolist() for run in runs]
    reference = transformers.BertModel.from_pretrained(minilm_folder, attn_implementation="eager").eval()
    layers, maps = hooked_layers(reference, *padded(ids))
    for row, (text, run) in enumerate(zip(texts, runs)):
        t = len(ids[row])
        assert_same_run(run, model.run(text))
        for layer in range(len(layers)):
            assert_layer_equals_hooked(run, layer, layers[layer], row, t)
            for head in range(maps[layer].shape[1]):
                assert close(run.attention(layer, head), maps[layer][row, head, :t, :t].numpy(), rtol=1e-4)


def test_a_query_whose_own_keys_are_all_hidden_reads_nothing_in_a_padded_batch_as_alone(padded_passes):
    """Query 1 of the 3-token prompt sees none of its keys (its weights are 0 alone); in the batch only the
    padding's keys are left, which are hidden too: the row is 0, not NaN."""
    model = tiny_model(tiny_bert(4))
    edit = explorer.Intervention().hide(0, query=1).hide(1, query=1).hide(2, query=1)
    runs = model.run(PROMPTS, intervention=edit)
    assert padded_passes == [len(PROMPTS)]
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt, intervention=edit))
