"""Activations by name against transformers' own hooks on the same weights, within 1e-4 relative.

run.residual / attn_out / mlp_out / mlp_hidden / norm_scale and run.cache under TransformerLens's
names, with and without an intervention, and after decoding steps (the on-demand pass equals the
cached decode).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from tests.api.test_match_hf import PROMPT
from tests.core import intervention_reference as ref
from tests.core.conftest import FAMILIES as RANDOM_FAMILIES

FAMILIES = sorted(RANDOM_FAMILIES)                      # every random family: issue 24's "how we will know"


def close(got: np.ndarray, expected, tol: float = 1e-4) -> None:
    expected = np.asarray(expected, dtype=np.float32)
    assert got.dtype == np.float32 and got.shape == expected.shape, (got.shape, expected.shape)
    assert np.abs(got - expected).max() <= tol * max(np.abs(expected).max(), 1e-6)


def hooked(hf_model, ids):
    """What transformers' modules hand on, per layer: block input and output, the sublayer outputs,
    the FFN's hidden layer (the input of its output matrix) and the input of the first norm."""
    kept = {"pre": [], "post": [], "attn_out": [], "mlp_out": [], "hidden": [], "q": [], "attn_in": []}
    handles = []
    for layer, block in enumerate(ref.decoder_layers(hf_model)):
        first_norm = getattr(block, "input_layernorm", None) or block.ln_1
        handles.append(first_norm.register_forward_hook(lambda m, a, out: kept["attn_in"].append(out[0].clone())))
        handles.append(block.register_forward_pre_hook(
            lambda m, a, k: kept["pre"].append((a[0] if a else k["hidden_states"])[0].clone()), with_kwargs=True))
        handles.append(block.register_forward_hook(
            lambda m, a, out: kept["post"].append((out[0] if isinstance(out, tuple) else out)[0].clone())))
        for which in ("attn_out", "mlp_out"):
            handles.append(ref.sublayer_modules(hf_model, which)[layer].register_forward_hook(
                lambda m, a, out, which=which: kept[which].append(
                    (out[0] if isinstance(out, tuple) else out)[0].clone())))
        mlp = block.mlp
        down = getattr(mlp, "down_proj", None) or getattr(mlp, "c_proj", None)
        if down is not None:
            handles.append(down.register_forward_pre_hook(lambda m, a: kept["hidden"].append(a[0][0].clone())))
        else:
            kept["hidden"].append(None)
    with ref.hooks(handles), torch.inference_mode():
        hf_model(torch.as_tensor(ids)[None])
    return kept


@pytest.mark.parametrize("family", FAMILIES)
def test_activations_equal_the_hooked_sublayer_outputs(family, hf_model, model):
    run = model.run(PROMPT, steps=2)
    kept = hooked(hf_model, run.ids)
    for layer in range(model.info.n_layers):
        close(run.residual(layer), kept["post"][layer])
        close(run.attn_out(layer), kept["attn_out"][layer])
        close(run.mlp_out(layer), kept["mlp_out"][layer])
        close(run.cache[f"blocks.{layer}.hook_resid_pre"], kept["pre"][layer])
        close(run.cache[f"blocks.{layer}.hook_resid_mid"], kept["pre"][layer] + kept["attn_out"][layer])
        close(run.cache[f"blocks.{layer}.ln1.hook_normalized"], kept["attn_in"][layer])      # X, the attention's input
        x = kept["pre"][layer].double()
        if family == "gpt2":
            expected = torch.sqrt(x.var(-1, unbiased=False) + hf_model.config.layer_norm_epsilon)
        else:
            expected = torch.sqrt((x * x).mean(-1) + hf_model.config.rms_norm_eps)
        close(run.norm_scale(layer, "attn"), expected)
    if not family.startswith("deepseek"):                                  # layer 1 is a mixture of experts
        close(run.mlp_hidden(1), kept["hidden"][1])
    else:
        with pytest.raises(explorer.ExplorerError, match="mixture of experts"):
            run.mlp_hidden(1)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_head_outputs_and_patterns_under_their_names(family, hf_model, model):
    run = model.run(PROMPT)
    inputs, recording = ref.record_head_inputs(hf_model)
    with recording, torch.inference_mode():
        out = hf_model(torch.as_tensor(run.ids)[None], output_attentions=True)
    n_heads = model.info.n_heads
    cache = run.activations(as_torch=True)
    z = cache["blocks.1.attn.hook_z"]
    assert isinstance(z, torch.Tensor) and z.shape == (len(PROMPT), n_heads, model.info.d_v)
    close(z.numpy().reshape(len(PROMPT), -1), inputs[1][0])
    close(run.cache["blocks.1.attn.hook_pattern"], out.attentions[1][0])
    assert "blocks.1.hook_resid_post" in run.cache and "blocks.9.hook_resid_post" not in run.cache
    assert len(list(run.cache)) == len(run.cache)


@pytest.mark.parametrize("family", ["llama"])
def test_activations_under_an_intervention_are_those_of_the_intervened_model(family, hf_model, model):
    intervention = explorer.Intervention().ablate(0, 1, "mean", positions=[3, 7])
    run = model.run(PROMPT, steps=1, intervention=intervention)
    with ref.ablate_heads(hf_model, [(0, 1)], model.info.n_heads, "mean", [3, 7]):
        kept = hooked(hf_model, run.ids[: len(PROMPT)])
    close(run.residual(1)[: len(PROMPT)], kept["post"][1])
    plain = model.run(PROMPT, steps=1)
    assert np.abs(plain.residual(1) - run.residual(1)).max() > 1e-3


@pytest.mark.parametrize("family", ["llama"])
def test_bad_names_and_layers_are_one_sentence(family, model):
    run = model.run(PROMPT)
    with pytest.raises(explorer.ExplorerError, match="not an activation name"):
        run.cache["blocks.0.hook_nothing"]
    with pytest.raises(explorer.ExplorerError, match="does not exist"):
        run.residual(5)
    with pytest.raises(explorer.ExplorerError, match="not one of"):
        run.norm_scale(0, "ffn")


@pytest.mark.parametrize("family", ["llama"])
def test_activations_asked_at_the_run_are_computed_in_one_pass(family, hf_model, model):
    run = model.run(PROMPT, activations=True)
    assert len(run._activations().values) >= 7 * model.info.n_layers             # filled before any read
    kept = hooked(hf_model, run.ids)
    close(run.cache["blocks.1.hook_resid_post"], kept["post"][1])
    named = model.run(PROMPT, activations=["blocks.0.hook_mlp_out"])
    assert (0, "mlp_out") in named._activations().values


@pytest.mark.parametrize("family", ["llama"])
def test_beyond_the_short_run_budget_only_the_asked_name_is_computed_and_kept(family, hf_model, model, monkeypatch):
    from explorer import api_activations

    run = model.run(PROMPT)
    trace_bytes = run.trace.nbytes()
    kept = hooked(hf_model, run.ids)
    close(run.residual(0), kept["post"][0])                                   # short: its layer's names at once
    assert {(0, name) for name in ("resid_pre", "resid_mid", "attn_out", "mlp_out")} <= set(run._activations().values)
    monkeypatch.setattr(api_activations, "ALL_AT_ONCE", 1)                    # as a long prompt's reads are
    long = model.run(PROMPT)
    close(long.residual(1), kept["post"][1])
    close(long.mlp_out(0), kept["mlp_out"][0])
    assert set(long._activations().values) == {(1, "resid_post"), (0, "mlp_out")}
    assert run.trace.nbytes() == long.trace.nbytes() == trace_bytes           # nothing of them is in the trace
