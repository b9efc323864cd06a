"""The encoder-decoder against torch's own nn.TransformerEncoderLayer/DecoderLayer on the same weights.

transformers has no model of our `explorer-encdec` config, so the reference is torch's post-LN
Transformer layers (Vaswani et al. 2017, as `nn.Transformer` builds them, without its final norms,
which the paper does not have), fed E[ids]·√d + PE: the engine's step-by-step logits and every
encoder, decoder and cross-attention weight must match it.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from explorer.core.encdec import sinusoidal
from explorer.core.encdec_decode import EncDecDecoder
from explorer.core.runtime import load_model

BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models" / "translate-en-zh"


def _attention(ours, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(torch.cat([ours.wq.weight, ours.wk.weight, ours.wv.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.wq.bias, ours.wk.bias, ours.wv.bias]))
    theirs.out_proj.weight.copy_(ours.wo.weight)
    theirs.out_proj.bias.copy_(ours.wo.bias)


def _feed_forward_and_norms(ours_ffn, norms, theirs) -> None:
    theirs.linear1.load_state_dict(ours_ffn.w_in.state_dict())
    theirs.linear2.load_state_dict(ours_ffn.w_out.state_dict())
    for ours_norm, name in norms:
        getattr(theirs, name).load_state_dict(ours_norm.state_dict())


@torch.no_grad()
def torch_layers(model):
    """nn.TransformerEncoderLayer / DecoderLayer copies of the engine's layers (post-LN, ReLU, no dropout)."""
    config = model.config
    make = dict(d_model=config.d_model, nhead=config.n_heads, dim_feedforward=config.d_ff, dropout=0.0,
                activation="relu", layer_norm_eps=config.norm_eps, batch_first=True, norm_first=False)
    encoders, decoders = [], []
    for ours in model.encoder:
        theirs = nn.TransformerEncoderLayer(**make).eval()
        _attention(ours.attn, theirs.self_attn)
        _feed_forward_and_norms(ours.ffn, [(ours.attn_norm, "norm1"), (ours.ffn_norm, "norm2")], theirs)
        encoders.append(theirs)
    for ours in model.decoder:
        theirs = nn.TransformerDecoderLayer(**make).eval()
        _attention(ours.self_attn, theirs.self_attn)
        _attention(ours.cross_attn, theirs.multihead_attn)
        _feed_forward_and_norms(ours.ffn, [(ours.self_norm, "norm1"), (ours.cross_norm, "norm2"),
                                           (ours.ffn_norm, "norm3")], theirs)
        decoders.append(theirs)
    return encoders, decoders


@torch.no_grad()
def reference(model, source: np.ndarray, target: np.ndarray):
    """Teacher-forced logits (T, V) and per-head weights (H, ., .) of every layer, from torch's layers."""
    encoders, decoders = torch_layers(model)
    d_model, embed = model.config.d_model, model.embed.weight
    x = embed[torch.as_tensor(source)][None] * math.sqrt(d_model) + sinusoidal(torch.arange(len(source)), d_model)
    weights = {"encoder": [], "self": [], "cross": []}
    for layer in encoders:
        weights["encoder"].append(layer.self_attn(x, x, x, average_attn_weights=False)[1][0])
        x = layer(x)
    memory = x                                                                  # C: (1, S, d)
    y = embed[torch.as_tensor(target)][None] * math.sqrt(d_model) + sinusoidal(torch.arange(len(target)), d_model)
    causal = nn.Transformer.generate_square_subsequent_mask(len(target))
    for layer in decoders:
        seen, w = layer.self_attn(y, y, y, attn_mask=causal, average_attn_weights=False)
        weights["self"].append(w[0])
        query = layer.norm1(y + seen)
        weights["cross"].append(layer.multihead_attn(query, memory, memory, average_attn_weights=False)[1][0])
        y = layer(y, memory, tgt_mask=causal, tgt_is_causal=True)
    return (y[0] @ embed.T).numpy(), {k: [w.numpy() for w in v] for k, v in weights.items()}


def random_model(seed: int):
    from explorer.core.encdec import EncDecConfig, EncoderDecoder, model_info
    from explorer.core.runtime import LoadedModel

    config = EncDecConfig(vocab_size=40, d_model=32, n_heads=4, d_ff=48, n_encoder_layers=2, n_decoder_layers=3,
                          max_positions=32)
    torch.manual_seed(seed)
    model = EncoderDecoder(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.add_(torch.randn_like(parameter) * (0.1 if "norm" in name else 0.3))
    model.eval().requires_grad_(False)
    return LoadedModel(model=model, config=config, tokenizer=None, info=model_info(model, config, "tiny"), name="tiny")


def engine_trace(loaded, source: np.ndarray, forced: list[int]):
    decoder = EncDecDecoder(loaded)
    decoder.prefill(source)
    for token in forced:
        decoder.force(token)
        decoder.step()
    logits = np.stack([decoder.logits_at(p) for p in range(decoder.trace.n_tokens)])
    return decoder.trace, logits


@pytest.mark.parametrize("which", ["random", "bundled translator"])
def test_engine_matches_torch_transformer_layers(which):
    if which == "random":
        loaded, source, forced = random_model(3), np.array([3, 17, 8, 22, 5, 9, 30]), [11, 4, 27, 13, 6]
    else:
        loaded = load_model(BUNDLED)
        source = loaded.tokenizer.encode("March 5, 2024").ids
        forced = loaded.tokenizer.encode("2024年3月5日").ids.tolist()
    trace, logits = engine_trace(loaded, np.asarray(source, dtype=np.int64), forced)
    ref_logits, ref = reference(loaded.model, trace.encoder.token_ids, trace.token_ids)
    assert np.abs(logits - ref_logits).max() <= 1e-4 * np.abs(ref_logits).max()
    for layer, expected in enumerate(ref["encoder"]):
        np.testing.assert_allclose(trace.encoder.layers[layer].attn.weights, expected, atol=1e-5, rtol=0)
    for layer in range(len(ref["self"])):
        np.testing.assert_allclose(trace.attention(layer), ref["self"][layer], atol=1e-5, rtol=0)
        np.testing.assert_allclose(trace.attention(layer, cross=True), ref["cross"][layer], atol=1e-5, rtol=0)


def test_a_perturbed_weight_breaks_the_match():
    loaded = random_model(3)
    trace, logits = engine_trace(loaded, np.array([3, 17, 8, 22, 5]), [11, 4, 27])
    with torch.no_grad():
        loaded.model.decoder[1].cross_attn.wk.weight[0, 0] += 0.5
    _, ref = reference(loaded.model, trace.encoder.token_ids, trace.token_ids)
    assert not np.allclose(trace.attention(1, cross=True), ref["cross"][1], atol=1e-5)
