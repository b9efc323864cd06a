"""The chained Intervention's new sites against the same edit made with transformers' own hooks.

Ablation at chosen positions (zero and mean), what a sublayer adds to the residual (attention,
FFN), a head's Q, K or V as projected, and a head's pattern A_h: logits within 1e-4 of the
largest, relative, and each edit changes something.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.errors import ExplorerError
from explorer.core.intervention import Intervention
from tests.core import intervention_reference as ref
from tests.core.conftest import FAMILIES
from tests.core.test_intervention import IDS, T, assert_close, ours

RNG = np.random.default_rng(11)


def changed(loaded, got) -> bool:
    return bool(((got - ours(loaded, None)).abs().max() > 1e-3).item())


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_ablation_at_chosen_positions_matches_hooks_on_w_o(family, hf_model, loaded, mode):
    positions = [4, T - 1]
    n_heads = loaded.config.n_heads
    with ref.ablate_heads(hf_model, [(1, 2)], n_heads, mode, positions):
        expected = ref.logits(hf_model, IDS)
    got = ours(loaded, Intervention().ablate(1, 2, mode, positions=positions))
    assert_close(got, expected)
    assert changed(loaded, got)
    whole = ours(loaded, Intervention().ablate(1, 2, mode))                   # every position: another edit
    assert (whole - got).abs().max() > 1e-3


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("which", ["attn_out", "mlp_out"])
def test_a_sublayer_output_patch_matches_a_hook_on_that_sublayer(family, hf_model, loaded, which):
    values = RNG.normal(size=(3, loaded.config.d_model)).astype(np.float32)
    with ref.patch_output(ref.sublayer_modules(hf_model, which)[0], values, 5):
        expected = ref.logits(hf_model, IDS)
    chained = Intervention().patch_attn_out if which == "attn_out" else Intervention().patch_mlp_out
    got = ours(loaded, chained(0, values, start=5))
    assert_close(got, expected)
    assert changed(loaded, got)


@pytest.mark.parametrize("family", ["llama", "mistral", "qwen2", "qwen3", "gpt2", "gemma3"])   # MLA: refused
@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_a_q_k_or_v_patch_matches_a_hook_on_the_projection(family, hf_model, loaded, which):
    module, cols = ref.projection_columns(hf_model, 1, which, 1)
    d_head = loaded.info.d_v if which == "v" else loaded.info.d_qk
    values = RNG.normal(size=(4, d_head)).astype(np.float32)
    with ref.patch_output(module, values, 6, cols):
        expected = ref.logits(hf_model, IDS)
    got = ours(loaded, getattr(Intervention(), f"patch_{which}")(1, 1, values, start=6))
    assert_close(got, expected)
    assert changed(loaded, got)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_pattern_patch_matches_a_registered_attention_function(family, hf_model, loaded):
    rows = RNG.random(size=(3, T)).astype(np.float32)
    rows /= rows.sum(-1, keepdims=True)
    with ref.registered_attention(hf_model, patterns={1: (3, rows, 8)}):
        expected = ref.logits(hf_model, IDS)
    got = ours(loaded, Intervention().patch_pattern(1, 3, rows, start=8))
    assert_close(got, expected)
    assert changed(loaded, got)


@pytest.mark.parametrize("family", ["deepseek_v2"])
def test_latent_attention_refuses_a_q_patch_in_one_sentence(family, loaded):
    with pytest.raises(ExplorerError, match="latent attention"):
        ours(loaded, Intervention().patch_q(0, 0, np.zeros((1, 8), dtype=np.float32)))


def test_chaining_leaves_the_base_unchanged_and_bad_values_are_refused():
    base = Intervention().ablate(0, 1)
    extended = base.kernel("relu", layers=[1]).hide(2, query=5)
    assert base == Intervention().ablate(0, 1) and len(extended.edits) == 1 and extended.ablations == base.ablations
    with pytest.raises(ExplorerError, match="not one of"):
        Intervention().ablate(0, 1, mode="median")
    with pytest.raises(ExplorerError, match="2 dimensions"):
        Intervention().patch_head(0, 1, np.zeros(4))
    with pytest.raises(ExplorerError, match="integer"):
        Intervention().ablate("0", 1)
    assert Intervention.from_json(base.ablate(1, 0, positions=[3]).to_json()).ablations[1].positions == (3,)


def path_reference(hf_model, sender, receiver, which: str, clean_heads, n_heads: int):
    """Hooks on transformers' modules making the path edit: the receiver's projection reads
    input_layernorm(h + (O_s' - O_s) W^O_s), O_s' from the clean run, O_s this run's own."""
    (ls, hs), (lr, hr) = sender, receiver
    o_proj = ref.output_projections(hf_model)[ls]
    cols = ref.head_slices(hf_model, ls, n_heads)(hs)
    block = ref.decoder_layers(hf_model)[lr]
    norm = getattr(block, "input_layernorm", None) or block.ln_1                # GPT-2: ln_1
    w_o = o_proj.weight.T if type(o_proj).__name__ == "Conv1D" else o_proj.weight   # (d, H d_v)
    attn = ref.attention_modules(hf_model)[lr]
    seen = {}

    def keep_sender(module, args):
        seen["own"] = args[0][..., cols].clone()

    def keep_residual(module, args, kwargs):
        seen["h"] = (args[0] if args else kwargs["hidden_states"]).clone()

    projection, head_cols = ref.projection_columns(hf_model, lr, which, hr)

    def project(x):
        """What the receiver's module outputs for input X (GPT-2's Conv1D: x W + b; a q/k norm after its
        projection, over (B, T, heads, d), called past its hooks: this runs inside one)."""
        if hasattr(attn, "c_attn"):
            return x @ attn.c_attn.weight + attn.c_attn.bias
        linear = getattr(attn, f"{which}_proj")
        y = torch.nn.functional.linear(x, linear.weight, linear.bias)
        return y if projection is linear else projection.forward(y.view(*y.shape[:-1], -1, attn.head_dim))

    def replace(module, args, output):
        delta = (torch.as_tensor(clean_heads[..., cols]) - seen["own"]) @ w_o[:, cols].T
        out = output.clone()
        y = project(norm(seen["h"] + delta))
        if isinstance(head_cols, tuple):                                         # (B, T, heads, d) after a norm
            out[:, :, head_cols[0]] = y[:, :, head_cols[0]]
        else:
            out[..., head_cols] = y[..., head_cols]
        return out
    handles = [o_proj.register_forward_pre_hook(keep_sender),
               block.register_forward_pre_hook(keep_residual, with_kwargs=True)]
    return ref.hooks(handles + [projection.register_forward_hook(replace)])


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3", "mistral", "gpt2"])
@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_path_patching_matches_hooks_that_feed_one_receiver(family, hf_model, loaded, which):
    clean_ids = np.random.default_rng(5).integers(0, 96, size=T)
    n_heads = loaded.config.n_heads
    kept, recording = ref.record_head_inputs(hf_model)
    with recording:
        ref.logits(hf_model, clean_ids)
    clean_heads = kept[0][0]                                                   # (T, H d_v) of layer 0
    with path_reference(hf_model, (0, 2), (1, 1), which, clean_heads, n_heads):
        expected = ref.logits(hf_model, IDS)
    d_v = clean_heads.shape[-1] // n_heads
    values = clean_heads[:, 2 * d_v: 3 * d_v].numpy()
    got = ours(loaded, Intervention().patch_path((0, 2), (1, 1), which, values))
    assert_close(got, expected)
    assert changed(loaded, got)
    whole = ours(loaded, Intervention().patch_head(0, 2, values))               # the sender patched everywhere
    assert (whole - got).abs().max() > 1e-3


@pytest.mark.parametrize("family", ["gemma3"])
def test_a_path_through_a_normalised_attention_output_is_refused(family, loaded):
    with pytest.raises(ExplorerError, match="normalises"):
        ours(loaded, Intervention().patch_path((0, 1), (1, 1), "q", np.zeros((T, 16), dtype=np.float32)))
