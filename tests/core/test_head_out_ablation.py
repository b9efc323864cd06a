"""Under an intervention on head outputs, Trace.head_out shows the O_h the model went on with.

The trace leaves O_h = A_h V_h out by default and derives it from A and V; an ablated head's
O_h is not A_h V_h but 0 (zero), its prompt mean (mean), or another run's values (a patch).
Reference: transformers' LlamaForCausalLM (eager), with the same ablation written by a forward
pre-hook on each layer's o_proj, whose input is concat_h O_h (head h: columns h d .. (h+1) d).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core import recording
from explorer.core.decode import Decoder
from explorer.core.intervention import HeadAblation, HeadPatch, Intervention, KeepOnly
from explorer.core.recording import RecordOptions
from explorer.core.runtime import from_tensors
from tests.core.conftest import make_hf_model

T, STEPS = 12, 2
PATCH = np.random.default_rng(5).normal(size=(3, 16)).astype(np.float32)   # 3 rows of head 2's O_h (d_head 16)

INTERVENTIONS = {
    "zero": Intervention(ablations=(HeadAblation(0, 1), HeadAblation(1, 3))),
    "mean": Intervention(ablations=(HeadAblation(0, 2, "mean"), HeadAblation(1, 0, "mean"))),
    "keep-only": Intervention(keep_only=KeepOnly(((0, 0), (1, 2), (1, 3)))),
    "keep-only mean": Intervention(keep_only=KeepOnly(((0, 3), (1, 1)), mode="mean")),
    "patch": Intervention(head_patches=(HeadPatch(1, 2, PATCH, start=4),)),
}


def reference_edit(intervention: Intervention, layer: int, n_heads: int):
    """What the hook does to head h's rows (T, d) of layer `layer`, from the intervention's own fields."""
    modes = {a.head: a.mode for a in intervention.ablations if a.layer == layer}
    if intervention.keep_only is not None:
        kept = {h for l, h in intervention.keep_only.heads if l == layer}
        modes.update({h: intervention.keep_only.mode for h in range(n_heads) if h not in kept and h not in modes})
    patches = [p for p in intervention.head_patches if p.layer == layer]

    def edit(head: int, rows: torch.Tensor) -> torch.Tensor:
        if modes.get(head) == "zero":
            rows = torch.zeros_like(rows)
        elif modes.get(head) == "mean":
            rows = rows[:T].mean(dim=0, keepdim=True).expand_as(rows)              # the prompt's mean O_h
        for patch in (p for p in patches if p.head == head):
            rows = rows.clone()
            rows[patch.start: patch.start + len(patch.values)] = torch.as_tensor(patch.values)
        return rows

    return edit


def transformers_with_the_edit(hf_model, ids: np.ndarray, intervention: Intervention):
    """Logits (T, V) and every layer's O_h (N_Q, T, d) as o_proj received them, with the edit applied."""
    config = hf_model.config
    n_heads, d = config.num_attention_heads, config.hidden_size // config.num_attention_heads
    seen, handles = {}, []
    for layer, block in enumerate(hf_model.model.layers):
        edit = reference_edit(intervention, layer, n_heads)

        def hook(module, args, layer=layer, edit=edit):
            heads = args[0][0].view(-1, n_heads, d)                                # (T, N_Q, d)
            edited = torch.stack([edit(h, heads[:, h]) for h in range(n_heads)], dim=1)
            seen[layer] = edited.transpose(0, 1).numpy().copy()                    # (N_Q, T, d)
            return (edited.reshape(1, -1, n_heads * d),)

        handles.append(block.self_attn.o_proj.register_forward_pre_hook(hook))
    try:
        with torch.inference_mode():
            logits = hf_model(torch.as_tensor(ids)[None]).logits[0].numpy()
    finally:
        for handle in handles:
            handle.remove()
    return logits, [seen[layer] for layer in range(len(hf_model.model.layers))]


@pytest.fixture(scope="module")
def hf_llama():
    return make_hf_model("llama", seed=2)


@pytest.mark.parametrize("maps", ["stored", "on demand"])
@pytest.mark.parametrize("name", sorted(INTERVENTIONS))
def test_head_out_under_an_intervention_equals_transformers(hf_llama, monkeypatch, name, maps):
    if maps == "on demand":
        monkeypatch.setattr(recording, "ON_DEMAND_FROM", 0)                     # the prefill's A rebuilt from Q, K
    intervention = INTERVENTIONS[name]
    loaded = from_tensors(hf_llama.config.to_dict(), hf_llama.state_dict(), name="tiny-llama")
    decoder = Decoder(loaded, RecordOptions(), capacity=T + STEPS + 1, intervention=intervention)
    decoder.prefill(np.random.default_rng(1).integers(0, 96, T))
    for _ in range(STEPS):
        decoder.step()
    trace = decoder.trace
    assert trace.steps[0].layers[0].attn.head_out is None                     # derived, not recorded
    assert trace.steps[0].layers[0].attn.on_demand == (maps == "on demand")
    logits, heads = transformers_with_the_edit(hf_llama, trace.token_ids, intervention)
    for position in range(trace.n_tokens):
        np.testing.assert_allclose(decoder.logits_at(position), logits[position], atol=1e-4, rtol=0)
    for layer, expected in enumerate(heads):
        for head in range(trace.model.n_heads):
            np.testing.assert_allclose(trace.head_out(layer, head), expected[head], atol=1e-5, rtol=0,
                                       err_msg=f"{name}: layer {layer} head {head}")
            np.testing.assert_allclose(trace.head_out(layer, head, upto_step=0), expected[head, :T], atol=1e-5,
                                       rtol=0, err_msg=f"{name}: layer {layer} head {head}, the prefill alone")


def test_an_ablated_head_is_zero_and_the_others_are_still_a_v(hf_llama):
    """The formula beside the reference: O_h = 0 for the zeroed head, A_h V_h for every other."""
    loaded = from_tensors(hf_llama.config.to_dict(), hf_llama.state_dict(), name="tiny-llama")
    zeroed = Intervention(ablations=(HeadAblation(1, 2),))
    decoder = Decoder(loaded, RecordOptions(), capacity=T + 2, intervention=zeroed)
    decoder.prefill(np.random.default_rng(3).integers(0, 96, T))
    trace = decoder.step()
    np.testing.assert_array_equal(trace.head_out(1, 2), np.zeros((T + 1, trace.model.d_v), dtype=np.float32))
    for head in (0, 1, 3):
        weights = trace.attention_head(1, head).astype(np.float64)
        values = trace.v(1, trace.kv_head_of(head)).astype(np.float64)
        np.testing.assert_allclose(trace.head_out(1, head), weights @ values, atol=1e-5, rtol=0)
