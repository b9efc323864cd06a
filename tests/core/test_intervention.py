"""Interventions against transformers with its own hooks and a registered attention function.

Every random family of the engine tests: kernels per layer, head ablation (zero, mean, only these
heads), hidden entries; logits within 1e-4 of the largest, relative. Also: exp at tau = 1 is the
model itself, exactly; ablating every head of a layer removes its attention sublayer.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.attention import attention_weights, kernel_weights
from explorer.core.errors import ExplorerError
from explorer.core.intervention import (
    SOFTMAX,
    HeadAblation,
    HideBand,
    HideEntry,
    HideToken,
    Intervention,
    KeepOnly,
    Kernel,
    KernelChoice,
)
from explorer.core.visibility import Visibility
from tests.core import intervention_reference as ref

T = 12
IDS = np.random.default_rng(3).integers(0, 96, size=T)
NO_O_BIAS = ["llama", "llama_mqa", "mistral", "qwen2", "qwen3", "gemma3", "deepseek_v2", "deepseek_v3"]


def ours(loaded, intervention, ids=IDS) -> torch.Tensor:
    with torch.inference_mode():
        return loaded.model.logits(loaded.model(torch.as_tensor(ids), np.arange(len(ids)), None, None, intervention))


def assert_close(got: torch.Tensor, expected: torch.Tensor, tol: float = 1e-4) -> None:
    assert got.shape == expected.shape
    assert ((got - expected).abs().max() / expected.abs().max()).item() < tol


@pytest.mark.parametrize("kernel", [("linear", 1.0), ("relu", 1.0), ("exp", 0.5), ("exp", 3.0)])
def test_a_kernel_in_one_layer_matches_a_registered_attention_function(family, hf_model, loaded, kernel):
    name, tau = kernel
    intervention = Intervention(kernels=(KernelChoice(Kernel(name, tau), layers=(1,)),))
    with ref.registered_attention(hf_model, kernels={1: kernel}):
        expected = ref.logits(hf_model, IDS)
    got = ours(loaded, intervention)
    assert_close(got, expected)
    assert ((got - ours(loaded, None)).abs().max() > 1e-3).item()             # the kernel changed something


def test_relu_in_every_layer_matches_and_the_trace_records_the_kernel(family, hf_model, loaded):
    from explorer.core.decode import Decoder

    intervention = Intervention(kernels=(KernelChoice(Kernel("relu")),))
    with ref.registered_attention(hf_model, kernels={0: ("relu", 1.0), 1: ("relu", 1.0)}):
        expected = ref.logits(hf_model, IDS)
    assert_close(ours(loaded, intervention), expected)
    trace = Decoder(loaded, intervention=intervention).prefill(IDS)
    assert all(layer.attn.kernel == Kernel("relu") for layer in trace.steps[0].layers)
    assert Decoder(loaded).prefill(IDS).steps[0].layers[0].attn.kernel == SOFTMAX


def test_the_reference_function_with_exp_is_the_model(family, hf_model, loaded):
    """The registered function itself is right: with exp it gives the model's own logits."""
    with ref.registered_attention(hf_model):
        expected = ref.logits(hf_model, IDS)
    assert_close(ours(loaded, None), expected)


def test_exp_at_temperature_one_is_the_model_exactly(family, loaded):
    intervention = Intervention(kernels=(KernelChoice(Kernel("exp", 1.0)),))
    assert torch.equal(ours(loaded, intervention), ours(loaded, None))


@pytest.mark.parametrize("softcap", [None, 2.0])
def test_kernel_weights_at_exp_one_equal_the_softmax_bit_for_bit(softcap):
    scores = torch.randn(3, 5, 5, generator=torch.Generator().manual_seed(0)) * 4
    visible = np.tril(np.ones((5, 5), dtype=bool))
    seen = Visibility.of(visible, np.arange(5), np.arange(5), "cpu")
    assert torch.equal(kernel_weights(scores.clone(), seen, softcap, SOFTMAX),
                       attention_weights(scores.clone(), seen.hidden, softcap))


def test_a_row_that_sees_nothing_is_all_zeros_and_masked_entries_contribute_nothing():
    scores = torch.tensor([[[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]]])               # (1, 2, 3)
    visible = np.array([[True, True, False], [False, False, False]])
    seen = Visibility.of(visible, np.arange(2), np.arange(3), "cpu")
    for kernel in (Kernel("linear"), Kernel("relu"), Kernel("exp", 2.0), SOFTMAX):
        weights = kernel_weights(scores.clone(), seen, None, kernel)
        assert torch.equal(weights[0, 1], torch.zeros(3)) and weights[0, 0, 2].item() == 0.0
    np.testing.assert_allclose(kernel_weights(scores.clone(), seen, None, Kernel("linear"))[0, 0, :2].numpy(),
                               [1.0 / -1.0, -2.0 / -1.0])                        # Z = 1 - 2
    np.testing.assert_allclose(kernel_weights(scores.clone(), seen, None, Kernel("relu"))[0, 0, :2].numpy(), [1, 0])


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_head_ablation_matches_hooks_on_the_output_projection(family, hf_model, loaded, mode):
    heads = [(0, 1), (1, 0), (1, 3)]
    intervention = Intervention(ablations=tuple(HeadAblation(l, h, mode) for l, h in heads))
    with ref.ablate_heads(hf_model, heads, loaded.config.n_heads, mode):
        expected = ref.logits(hf_model, IDS)
    got = ours(loaded, intervention)
    assert_close(got, expected)
    assert ((got - ours(loaded, None)).abs().max() > 1e-3).item()


def test_only_these_heads_ablates_every_other_head(family, hf_model, loaded):
    kept = ((0, 2), (1, 1))
    others = [(l, h) for l in range(2) for h in range(loaded.config.n_heads) if (l, h) not in kept]
    with ref.ablate_heads(hf_model, others, loaded.config.n_heads):
        expected = ref.logits(hf_model, IDS)
    assert_close(ours(loaded, Intervention(keep_only=KeepOnly(kept))), expected)


@pytest.mark.parametrize("family", NO_O_BIAS)
def test_ablating_every_head_of_a_layer_removes_its_attention_sublayer(family, hf_model, loaded):
    every = Intervention(ablations=tuple(HeadAblation(1, h) for h in range(loaded.config.n_heads)))
    with ref.silence_attention(hf_model, 1):
        expected = ref.logits(hf_model, IDS)
    assert_close(ours(loaded, every), expected)


def test_hidden_entries_tokens_and_bands_match_a_registered_attention_function(family, hf_model, loaded):
    edits = (HideEntry(query=7, key=2), HideToken(key=4, first_layer=1, last_layer=1), HideBand(low=0, high=0),
             HideToken(key=0, first_layer=0, last_layer=0))
    queries = np.arange(T)
    hidden = {layer: np.zeros((T, T), dtype=bool) for layer in range(2)}
    hidden[0][7, 2] = hidden[1][7, 2] = True
    hidden[1][:, 4] = True
    hidden[0][queries, queries] = hidden[1][queries, queries] = True             # the diagonal band i - j = 0
    hidden[0][:, 0] = True                                                        # row 0 then sees nothing
    with ref.registered_attention(hf_model, hidden=hidden):
        expected = ref.logits(hf_model, IDS)
    assert_close(ours(loaded, Intervention(edits=edits)), expected)


def test_the_intervened_trace_records_the_edited_mask(loaded):
    from explorer.core.decode import Decoder

    trace = Decoder(loaded, intervention=Intervention(edits=(HideToken(key=3, first_layer=1),))).prefill(IDS)
    assert not trace.mask(1)[:, 3].any() and trace.mask(0)[5, 3]
    assert np.all(trace.attention(1)[:, :, 3] == 0)


def test_bad_interventions_are_named():
    with pytest.raises(ExplorerError, match="kernel 'cosine'"):
        Kernel("cosine")
    with pytest.raises(ExplorerError, match="above 0"):
        Kernel("exp", 0.0)
    with pytest.raises(ExplorerError, match="ablation 'half'"):
        Intervention(ablations=(HeadAblation(0, 0, "half"),))
    with pytest.raises(ExplorerError, match="layer 5 does not exist"):
        Intervention(ablations=(HeadAblation(5, 0),)).check(n_layers=2, n_heads=4)
    with pytest.raises(ExplorerError, match="head 9 of layer 1"):
        Intervention(ablations=(HeadAblation(1, 9),)).check(n_layers=2, n_heads=4)


def test_an_intervention_round_trips_through_json():
    import json

    intervention = Intervention(
        kernels=(KernelChoice(Kernel("exp", 0.5), (0, 2)), KernelChoice(Kernel("linear"))),
        ablations=(HeadAblation(1, 2, "mean"),), keep_only=KeepOnly(((0, 1), (1, 1))),
        edits=(HideEntry(3, 1), HideToken(2, 1, 3), HideBand(4, None, where="cross")))
    assert Intervention.from_json(json.loads(json.dumps(intervention.to_json()))) == intervention
    with pytest.raises(ExplorerError, match="malformed"):
        Intervention.from_json({"ablations": [{"layer": 1}]})
