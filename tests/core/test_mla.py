"""Multi-head Latent Attention: the absorbed path equals the naive expansion and transformers,
and the cache holds only the latent c_KV and the RoPE key."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.decode import Decoder
from explorer.core.kv_cache import LatentCache
from explorer.core.mla import LatentAttention

PROMPT = np.array([3, 14, 15, 92, 65, 35, 89], dtype=np.int64)
MLA_FAMILIES = ["deepseek_v2", "deepseek_v3"]


def _decode(loaded, absorbed: bool, steps: int = 6):
    LatentAttention.absorbed = absorbed
    try:
        decoder = Decoder(loaded)
        decoder.prefill(PROMPT)
        for _ in range(steps):
            decoder.step()
        return decoder
    finally:
        LatentAttention.absorbed = True


@pytest.mark.parametrize("family", MLA_FAMILIES)
def test_absorbed_decoding_equals_naive_expansion(loaded):
    absorbed, naive = _decode(loaded, True), _decode(loaded, False)
    np.testing.assert_array_equal(absorbed.trace.token_ids, naive.trace.token_ids)
    for position in range(absorbed.trace.n_tokens):
        a, n = absorbed.logits_at(position), naive.logits_at(position)
        assert np.abs(a - n).max() < 1e-5 * np.abs(n).max()
    for layer in range(loaded.config.n_layers):
        np.testing.assert_allclose(absorbed.trace.attention(layer), naive.trace.attention(layer), atol=1e-6)


@pytest.mark.parametrize("family", MLA_FAMILIES)
def test_absorbed_decoding_equals_transformers(loaded, hf_model):
    decoder = _decode(loaded, True)
    ids = torch.as_tensor(decoder.trace.token_ids)[None]
    with torch.inference_mode():
        out = hf_model(ids, output_attentions=True)
    logits = out.logits[0].numpy()
    for position in range(ids.shape[1]):
        assert np.abs(decoder.logits_at(position) - logits[position]).max() < 1e-4 * np.abs(logits).max()
    for layer, reference in enumerate(out.attentions):
        np.testing.assert_allclose(decoder.trace.attention(layer), reference[0].numpy(), atol=1e-5)


@pytest.mark.parametrize("family", MLA_FAMILIES)
def test_the_cache_holds_only_the_latent_and_rope_key(loaded):
    config = loaded.config
    decoder = _decode(loaded, True, steps=3)
    tokens = len(PROMPT) + 3
    for layer_cache in decoder.kv_cache.layers:
        assert isinstance(layer_cache, LatentCache)
        latents, rope_keys = layer_cache.buffers
        assert latents.shape[1:] == (config.kv_lora_rank,) and rope_keys.shape[1:] == (config.qk_rope_dim,)
        assert layer_cache.bytes_in_use() == tokens * (config.kv_lora_rank + config.qk_rope_dim) * 4
    attn = decoder.trace.steps[-1].layers[0].attn
    assert attn.latent.shape == (1, config.kv_lora_rank) and attn.k_rope.shape == (1, config.qk_rope_dim)
    # The per-head keys shown are expanded from the latent: K_h = [c W_h^UK^T ; k_R]
    np.testing.assert_allclose(attn.k[:, 0, config.qk_nope_dim:], np.repeat(attn.k_rope, config.n_heads, 0))
    w_uk, _ = loaded.model.layers[0].attn.up_projections()
    expanded = np.einsum("c,hnc->hn", attn.latent[0], w_uk.numpy())
    np.testing.assert_allclose(attn.k[:, 0, : config.qk_nope_dim], expanded, atol=1e-5)


@pytest.mark.parametrize("family", ["deepseek_v3"])
def test_per_expert_checkpoint_names_load_the_same(hf_model):
    """Real DeepSeek checkpoints name each expert separately; both layouts build the same model."""
    from explorer.core.runtime import from_tensors

    tensors = {}
    for name, tensor in hf_model.state_dict().items():
        if name.endswith("experts.gate_up_proj"):
            base = name.removesuffix(".gate_up_proj")
            for e, fused in enumerate(tensor):
                gate, up = fused.chunk(2)
                tensors[f"{base}.{e}.gate_proj.weight"], tensors[f"{base}.{e}.up_proj.weight"] = gate, up
        elif name.endswith("experts.down_proj"):
            base = name.removesuffix(".down_proj")
            for e, down in enumerate(tensor):
                tensors[f"{base}.{e}.down_proj.weight"] = down
        else:
            tensors[name] = tensor
    split = from_tensors(hf_model.config.to_dict(), tensors)
    fused = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    for (name, a), (_, b) in zip(split.model.state_dict().items(), fused.model.state_dict().items()):
        assert torch.equal(a, b), name
