"""The Q/K/V panel's projection weights: each matrix, applied to the recorded X, gives the recorded Q, K, V."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core.decode import Decoder
from explorer.core.errors import ExplorerError
from explorer.core.runtime import from_tensors
from explorer.core.weights_view import head_weights
from tests.core.conftest import make_hf_model


def decoded(family: str):
    hf = make_hf_model(family, seed=3)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name=f"tiny-{family}")
    return loaded, Decoder(loaded).prefill(np.arange(6) % 50)


@pytest.mark.parametrize("family", ["llama", "llama_mqa"])
def test_dense_heads_reproduce_q_k_v_and_name_the_shared_kv_head(family):
    loaded, trace = decoded(family)
    info = loaded.info
    group = info.n_heads // info.n_kv_heads
    record, x = trace.steps[0].layers[1].attn, trace.steps[0].layers[1].x                # x: (T, d_model)
    for head in range(info.n_heads):
        view = head_weights(loaded, 1, head)
        g = head // group
        assert list(view.matrices) == [f"W_{head}^Q", f"W_{g}^K", f"W_{g}^V"]
        assert view.kv_head == g and view.shared_by == tuple(range(g * group, (g + 1) * group))
        assert view.matrices[f"W_{head}^Q"].shape == (info.d_model, info.d_qk)
        np.testing.assert_allclose(x @ view.matrices[f"W_{head}^Q"], trace.q_pre_rope(1, head), atol=1e-4)
        np.testing.assert_allclose(x @ view.matrices[f"W_{g}^K"], trace.k_pre_rope(1, g), atol=1e-4)
        np.testing.assert_allclose(x @ view.matrices[f"W_{g}^V"], record.v[g], atol=1e-4)


def test_mla_gives_the_down_and_up_projections_that_expand_the_latent():
    loaded, trace = decoded("deepseek_v3")
    record = trace.steps[0].layers[0].attn
    view = head_weights(loaded, 0, 2)
    names = list(view.matrices)
    assert view.kind == "mla" and view.kv_head is None and len(view.shared_by) == loaded.info.n_heads
    assert {"W^{DKV}", "W^{KR}", "W_2^{UK}", "W_2^{UV}"} <= set(names)
    d_c = loaded.info.mla_rank
    assert view.matrices["W^{DKV}"].shape == (loaded.info.d_model, d_c)
    assert view.matrices["W^{KR}"].shape[1] == loaded.info.mla_rope_dim
    w_uk, w_uv = view.matrices["W_2^{UK}"], view.matrices["W_2^{UV}"]                  # (d_c, d_nope), (d_c, d_v)
    np.testing.assert_allclose(record.latent @ w_uv, record.v[2], atol=1e-4)
    np.testing.assert_allclose(record.latent @ w_uk, record.k[2][:, : w_uk.shape[1]], atol=1e-4)


def test_a_head_or_layer_outside_the_model_is_one_sentence():
    loaded, _ = decoded("llama")
    with pytest.raises(ExplorerError, match="head 99 is not one of"):
        head_weights(loaded, 0, 99)
    with pytest.raises(ExplorerError, match="layer 7 is not a layer"):
        head_weights(loaded, 7, 0)
