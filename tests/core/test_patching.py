"""Activation patching against transformers with forward pre-hooks, on the random families and SmolLM2.

Head site: a pre-hook on W^O writes one head's clean O_h into the corrupted run. Residual site:
a pre-hook on decoder layer l writes the clean residual entering it at one position.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from explorer.core import patching, store
from explorer.core.errors import ExplorerError
from tests.core import intervention_reference as ref

CLEAN = np.array([5, 17, 42, 8, 63, 21, 9, 30], dtype=np.int64)
CORRUPT = np.array([5, 17, 77, 8, 63, 21, 9, 30], dtype=np.int64)
TARGET, AGAINST = 11, 40


def _diff(logits: torch.Tensor) -> float:
    return float(logits[-1, TARGET] - logits[-1, AGAINST])


def _reference_head_map(hf_model, n_layers: int, n_heads: int) -> np.ndarray:
    kept, recording = ref.record_head_inputs(hf_model)
    with recording:
        ref.logits(hf_model, CLEAN)
    out = np.zeros((n_layers, n_heads))
    for layer in range(n_layers):
        for head in range(n_heads):
            with ref.patch_head(hf_model, layer, head, n_heads, kept[layer]):
                out[layer, head] = _diff(ref.logits(hf_model, CORRUPT))
    return out


def _reference_resid_map(hf_model, n_layers: int) -> np.ndarray:
    kept, recording = ref.record_residuals(hf_model)
    with recording:
        ref.logits(hf_model, CLEAN)
    out = np.zeros((n_layers, len(CLEAN)))
    for layer in range(n_layers):
        for position in range(len(CLEAN)):
            with ref.patch_residual(hf_model, layer, position, kept[layer][0, position]):
                out[layer, position] = _diff(ref.logits(hf_model, CORRUPT))
    return out


def _assert_map_close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() <= 1e-4 * max(1.0, np.abs(expected).max())


@pytest.mark.parametrize("batch", [16, 1])
def test_head_patching_matches_pre_hooks_on_the_output_projection(family, hf_model, loaded, batch):
    result = patching.patch_map(loaded, CLEAN, CORRUPT, TARGET, AGAINST, "head", batch=batch)
    config = loaded.config
    _assert_map_close(result.values, _reference_head_map(hf_model, config.n_layers, config.n_heads))
    assert result.clean == pytest.approx(_diff(ref.logits(hf_model, CLEAN)), abs=1e-4)
    assert result.corrupt == pytest.approx(_diff(ref.logits(hf_model, CORRUPT)), abs=1e-4)
    assert result.complete and np.ptp(result.values) > 1e-3


def test_residual_patching_matches_pre_hooks_on_the_decoder_layers(family, hf_model, loaded):
    result = patching.patch_map(loaded, CLEAN, CORRUPT, TARGET, AGAINST, "resid")
    _assert_map_close(result.values, _reference_resid_map(hf_model, loaded.config.n_layers))
    # the residual entering layer 0 at the one differing position is the clean run itself
    assert result.values[0, 2] == pytest.approx(result.clean, abs=1e-4)


@pytest.mark.parametrize("site", ["head", "resid"])
def test_patching_a_prompt_into_itself_changes_nothing(loaded, site):
    result = patching.patch_map(loaded, CLEAN, CLEAN, TARGET, AGAINST, site)
    assert result.clean == result.corrupt
    np.testing.assert_allclose(result.values, result.clean, atol=1e-5, rtol=0)


def test_the_probability_metric(hf_model, loaded):
    result = patching.patch_map(loaded, CLEAN, CORRUPT, TARGET, None, "head", metric="prob")
    expected = torch.softmax(ref.logits(hf_model, CORRUPT)[-1].double(), -1)[TARGET].item()
    assert result.corrupt == pytest.approx(expected, abs=1e-6)
    assert np.all((result.values >= 0) & (result.values <= 1))


def test_progress_is_reported_and_cancel_stops_between_passes(loaded):
    seen = []
    patching.patch_map(loaded, CLEAN, CORRUPT, TARGET, AGAINST, "head", progress=lambda d, t: seen.append((d, t)),
                       batch=2)
    total = loaded.config.n_layers * loaded.config.n_heads
    assert seen[-1] == (total, total) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    event = threading.Event()
    result = patching.patch_map(loaded, CLEAN, CORRUPT, TARGET, AGAINST, "head", batch=2,
                                progress=lambda d, t: event.set() if d >= 2 else None, cancel=event)
    assert not result.complete
    assert np.isfinite(result.values[0, :2]).all() and np.isnan(result.values[0, 2:]).all()


def test_bad_requests_are_named(loaded):
    with pytest.raises(ExplorerError, match="8 tokens and the corrupted one 7"):
        patching.patch_map(loaded, CLEAN, CORRUPT[:7], TARGET, AGAINST)
    with pytest.raises(ExplorerError, match="site 'mlp'"):
        patching.patch_map(loaded, CLEAN, CORRUPT, TARGET, AGAINST, "mlp")
    with pytest.raises(ExplorerError, match="compare against"):
        patching.patch_map(loaded, CLEAN, CORRUPT, TARGET, None)


# ----- the real SmolLM2 ----------------------------------------------------------------------
def _smollm2():
    path = store.pulled_path("smollm2-135m")
    if path is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    return path


@pytest.fixture(scope="module")
def smollm2_pair():
    """Our engine and transformers' own Llama on the same un-permuted GGUF weights."""
    import transformers

    from explorer.core.loaders import open_checkpoint
    from explorer.core.runtime import load_model

    checkpoint = open_checkpoint(_smollm2())
    config = {k: v for k, v in checkpoint.hf_config.items() if k != "model_type"}
    hf_model = transformers.LlamaForCausalLM._from_config(transformers.LlamaConfig(**config),
                                                          attn_implementation="eager").eval()
    hf_model.load_state_dict(checkpoint.tensors, strict=False)
    hf_model.tie_weights()
    return load_model(checkpoint), hf_model, checkpoint.tokenizer


@pytest.mark.realmodel
@pytest.mark.slow
def test_smollm2_head_patching_and_ablation_match_transformers(smollm2_pair):
    loaded, hf_model, tokenizer = smollm2_pair
    clean = tokenizer.encode("The Eiffel Tower is located in the city of").ids
    corrupt = tokenizer.encode("The Colosseum is located in the city of").ids
    target = patching.single_token(tokenizer, " Paris", "target")
    against = patching.single_token(tokenizer, " Rome", "against")
    result = patching.patch_map(loaded, clean, corrupt, target, against, "head")
    assert result.values.shape == (30, 9) and result.clean > 0 > result.corrupt
    kept, recording = ref.record_head_inputs(hf_model)
    with recording:
        clean_logits = ref.logits(hf_model, clean)
    assert result.clean == pytest.approx(float(clean_logits[-1, target] - clean_logits[-1, against]), rel=1e-4)
    strongest = zip(*np.unravel_index(np.argsort(result.values, None)[-2:], (30, 9)))
    for layer, head in [(0, 0), (12, 4), (29, 8), *strongest]:
        with ref.patch_head(hf_model, int(layer), int(head), 9, kept[int(layer)]):
            logits = ref.logits(hf_model, corrupt)
        expected = float(logits[-1, target] - logits[-1, against])
        assert abs(result.values[layer, head] - expected) <= 1e-4 * abs(logits).max().item()


@pytest.mark.realmodel
@pytest.mark.slow
def test_smollm2_kernel_swap_and_ablation_logits_match_transformers(smollm2_pair):
    from explorer.core.intervention import HeadAblation, Intervention, Kernel, KernelChoice

    loaded, hf_model, tokenizer = smollm2_pair
    ids = tokenizer.encode("The capital of France is").ids
    with ref.registered_attention(hf_model, kernels={7: ("relu", 1.0), 20: ("exp", 2.0)}):
        expected = ref.logits(hf_model, ids)
    intervention = Intervention(kernels=(KernelChoice(Kernel("relu"), (7,)), KernelChoice(Kernel("exp", 2.0), (20,))),)
    with torch.inference_mode():
        got = loaded.model.logits(loaded.model(torch.as_tensor(ids), np.arange(len(ids)), None, None, intervention))
    assert ((got - expected).abs().max() / expected.abs().max()).item() < 1e-4
    heads = [(3, 1), (15, 5)]
    with ref.ablate_heads(hf_model, heads, 9):
        expected = ref.logits(hf_model, ids)
    with torch.inference_mode():
        got = loaded.model.logits(loaded.model(torch.as_tensor(ids), np.arange(len(ids)), None, None,
                                               Intervention(ablations=tuple(HeadAblation(*h) for h in heads))))
    assert ((got - expected).abs().max() / expected.abs().max()).item() < 1e-4
