"""One position through one block, against transformers' own modules read with hooks."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.block_walk import walk_block
from explorer.core.errors import ExplorerError

T, POSITION = 9, 6


def _hooked(hf_model, layer: int, ids: torch.Tensor) -> dict:
    """What transformers' block `layer` saw: its input h, the first norm's output, the FFN's hidden units
    (the input of its down projection) and the FFN's output as added (Gemma: after its post-norm)."""
    inner = getattr(hf_model, "model", None) or hf_model.transformer
    block = (getattr(inner, "layers", None) or inner.h)[layer]
    first_norm = getattr(block, "input_layernorm", None) or block.ln_1
    mlp = block.mlp
    down = getattr(mlp, "down_proj", None) or getattr(mlp, "c_proj", None)
    added = getattr(block, "post_feedforward_layernorm", None) or mlp
    seen, handles = {}, []
    handles.append(first_norm.register_forward_pre_hook(lambda m, a: seen.__setitem__("h", a[0][0])))
    handles.append(first_norm.register_forward_hook(lambda m, a, out: seen.__setitem__("x", out[0])))
    handles.append(added.register_forward_hook(lambda m, a, out: seen.__setitem__("f", out[0])))
    if down is not None:
        handles.append(down.register_forward_pre_hook(lambda m, a: seen.__setitem__("hidden", a[0][0])))
    with torch.inference_mode():
        hf_model(ids[None])
    for handle in handles:
        handle.remove()
    out = {name: value[POSITION].double().numpy() for name, value in seen.items()}
    if down is not None:                                                  # ||W_down[:, n]|| per hidden unit n
        weight = down.weight.detach().double()
        out["column_norms"] = (weight.norm(dim=1) if type(down).__name__ == "Conv1D" else weight.norm(dim=0)).numpy()
    return out


@pytest.mark.parametrize("layer", [0, 1])
def test_the_walk_matches_transformers(family, hf_model, loaded, layer):
    ids = torch.randint(0, 96, (T,), generator=torch.Generator().manual_seed(3))
    walk = walk_block(loaded, ids.numpy(), layer, POSITION, top=6)
    seen = _hooked(hf_model, layer, ids)
    np.testing.assert_allclose(walk.h_in, seen["h"], atol=1e-4, rtol=0)
    np.testing.assert_allclose(walk.attn_norm.output, seen["x"], atol=1e-4, rtol=0)
    np.testing.assert_allclose(walk.ffn_out, seen["f"], atol=1e-4, rtol=0)
    np.testing.assert_allclose(walk.h_out, walk.h_mid + walk.ffn_out, atol=1e-4, rtol=0)
    assert walk.max_delta <= 1e-4, walk.deltas
    if walk.attn_norm.mean is not None:                                   # LayerNorm: its mean and variance
        assert walk.attn_norm.mean == pytest.approx(seen["h"].mean(), abs=1e-6)
        assert walk.attn_norm.variance == pytest.approx(seen["h"].var(), rel=1e-6)
    else:
        assert walk.attn_norm.scale == pytest.approx(np.sqrt((seen["h"] ** 2).mean() + walk.attn_norm.eps), rel=1e-6)
    if walk.experts:                                                      # a MoE layer: its chosen experts
        assert len(walk.experts) == loaded.config.experts_per_token
        assert all(a[1] >= b[1] for a, b in zip(walk.experts, walk.experts[1:]))
    else:
        hidden = seen["hidden"]
        writes_ref = np.abs(hidden) * seen["column_norms"]
        assert [n.index for n in walk.neurons] == np.argsort(-writes_ref)[:6].tolist()
        for neuron in walk.neurons:
            assert neuron.hidden == pytest.approx(hidden[neuron.index], abs=1e-5)
        writes = [n.write for n in walk.neurons]
        assert writes == sorted(writes, reverse=True)


@pytest.mark.parametrize("family", ["llama"])
def test_a_bad_layer_is_one_sentence(loaded):
    with pytest.raises(ExplorerError, match="layer 5 is not one of the 2 layers"):
        walk_block(loaded, np.arange(4), 5)
