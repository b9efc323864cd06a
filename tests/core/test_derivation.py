"""Show the work: A[i, j] and y_i recomputed from the trace equal what the model recorded, for every family."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from explorer.core import derivation
from explorer.core.drivers import make_decoder
from explorer.core.recording import RecordOptions

T, STEPS = 9, 3


def _trace(loaded, record: RecordOptions):
    decoder = make_decoder(loaded, record, capacity=T + STEPS)
    decoder.prefill(np.random.default_rng(4).integers(0, 96, T))
    for _ in range(STEPS):
        decoder.step()
    return decoder.trace


@pytest.mark.parametrize("record", [RecordOptions(), RecordOptions(head_out=True, pre_rope=True)],
                         ids=["derived", "recorded"])
@pytest.mark.parametrize("row, column, upto", [(5, 3, 0), (5, 5, 0), (T + STEPS - 1, 2, STEPS), (T + 1, T, 2)])
def test_recomputed_values_equal_the_record(loaded, record, row, column, upto):
    trace = _trace(loaded, record)
    layer, head = loaded.config.n_layers - 1, loaded.config.n_heads - 1
    cell = derivation.derive_cell(trace, layer, head, row, column, upto)
    assert cell.max_delta <= 1e-5, cell.deltas
    assert {"A row", "y = sum_j A_ij v_j"} <= set(cell.deltas)
    recorded = trace.attention_head(layer, head, upto)[row]
    assert cell.weight == pytest.approx(float(recorded[column]), abs=1e-6)
    # the walk is consistent with itself: sum of products, scale, row max, Z and A
    assert cell.dot == pytest.approx(cell.products.sum())
    assert cell.visible == bool(trace.mask(layer, upto)[row, column])
    if cell.visible:
        assert cell.weight == pytest.approx(np.exp(cell.score - cell.row_max) / cell.z, rel=1e-12)
    assert cell.z == pytest.approx(cell.row_f.sum())
    assert cell.output.shape == (trace.head_out(layer, head, upto).shape[1],)
    assert len(cell.top_terms) <= 5 and all(a[2] >= b[2] for a, b in zip(cell.top_terms, cell.top_terms[1:]))


def test_rope_angles_and_pairs(loaded, family):
    trace = _trace(loaded, RecordOptions(pre_rope=True))
    cell = derivation.derive_cell(trace, 0, 0, 6, 4)
    if family == "gpt2":
        assert cell.q_rotation is None and "q after RoPE" not in cell.deltas
        return
    rotation = cell.q_rotation
    angles = trace.rope[0]
    np.testing.assert_allclose(rotation.angles, 6 * angles.inv_freq.astype(np.float64), rtol=1e-12)
    assert rotation.pairs.shape == (angles.inv_freq.shape[0], 2)
    assert len(set(rotation.pairs.ravel().tolist())) == rotation.pairs.size      # each dim in one pair
    assert cell.deltas["q after RoPE"] <= 1e-5 and cell.deltas["k after RoPE"] <= 1e-5
    assert (cell.latent is not None) == family.startswith("deepseek")
    if cell.latent is not None:
        assert cell.latent.shape == (loaded.config.kv_lora_rank,) and cell.deltas["k_R in k_j"] <= 1e-6


def test_the_scale_softcap_and_mask_are_the_models(loaded):
    trace = _trace(loaded, RecordOptions())
    cell = derivation.derive_cell(trace, 0, 1, 4, 7)
    assert not cell.visible and cell.weight == 0.0 and np.isneginf(cell.row_scores[7])
    assert cell.scale == pytest.approx(trace.steps[0].layers[0].attn.scale)
    assert cell.softcap == loaded.config.attn_softcap


@pytest.mark.parametrize("family", ["llama", "deepseek_v3"])
def test_a_record_that_differs_is_seen(loaded):
    """The comparison can fail: a perturbed recorded A shows up as a large delta (A stored, not rebuilt)."""
    trace = _trace(loaded, RecordOptions(attention="stored"))
    step = trace.steps[0]
    attn = step.layers[1].attn
    bumped = replace(attn, weights_packed=attn.weights_packed + np.float32(1e-3))
    layers = (step.layers[0], replace(step.layers[1], attn=bumped)) + step.layers[2:]
    broken = replace(trace, steps=(replace(step, layers=layers),) + trace.steps[1:], _cache={})
    assert derivation.derive_cell(broken, 1, 0, 5, 2, 0).deltas["A row"] >= 9e-4


@pytest.mark.realmodel
def test_real_smollm2_cells_are_exact():
    from explorer.core import store
    from explorer.core.runtime import load_model

    path = store.pulled_path("smollm2-135m")
    if path is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    loaded = load_model(path)
    decoder = make_decoder(loaded)
    decoder.prefill(loaded.tokenizer.encode("The capital of France is").ids)
    decoder.step()
    for layer, head, row, column in [(0, 0, 3, 1), (18, 6, 5, 2), (29, 8, 5, 0)]:
        assert derivation.derive_cell(decoder.trace, layer, head, row, column).max_delta <= 1e-5


def test_the_heads_writes_sum_to_transformers_o_proj_output(family, hf_model, loaded):
    """y_i W^O_h over the heads, plus the bias, is what transformers' o_proj (GPT-2: c_proj) outputs;
    for MLA the absorbed score (W^UK q) . c_KV + q_R . k_R equals the expanded <q, k>."""
    import torch

    from explorer.core.attribution import output_columns
    from explorer.core.weights_view import head_weights

    ids = np.random.default_rng(4).integers(0, 96, T)
    trace = make_decoder(loaded, capacity=T).prefill(ids)
    inner = getattr(hf_model, "model", None) or hf_model.transformer
    blocks = getattr(inner, "layers", None) or inner.h
    attn = getattr(blocks[1], "self_attn", None) or blocks[1].attn
    o_proj = getattr(attn, "o_proj", None) or attn.c_proj
    seen = []
    handle = o_proj.register_forward_hook(lambda module, args, out: seen.append(out[0]))
    with torch.inference_mode():
        hf_model(torch.tensor(ids)[None])
    handle.remove()
    row, total = 6, np.zeros(loaded.config.d_model)
    for head in range(loaded.config.n_heads):
        w_uk = None
        if loaded.config.mla:
            w_uk = head_weights(loaded, 1, head).matrices[f"W_{head}^{{UK}}"]
        cell = derivation.derive_cell(trace, 1, head, row, 2, w_o=output_columns(loaded, 1, head), w_uk=w_uk)
        total += cell.head_write
        assert cell.max_delta <= 1e-5, cell.deltas
        assert ("absorbed = expanded" in cell.deltas) == loaded.config.mla
    bias = getattr(o_proj, "bias", None)
    expected = seen[0][row].double().numpy() - (bias.detach().double().numpy() if bias is not None else 0.0)
    np.testing.assert_allclose(total, expected, atol=1e-4, rtol=0)
