"""Gemma 1 and Gemma 2, added as family rows (explorer/core/families.py): logits and every layer's attention
match transformers' eager GemmaForCausalLM and Gemma2ForCausalLM in float32 (Gemma 2 with and without its
window, its attention and logit soft-caps set so that they bite), prefill then cached steps included; the
config reader agrees with transformers' config classes on absent keys and with its attention modules on the
scale, cap and window of each layer; the model map draws Gemma 2's sandwich norms and not Gemma 1's."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import transformers  # the reference

from explorer.core.capture import StepCapture
from explorer.core.config import ModelConfig
from explorer.core.drivers import make_decoder
from explorer.core.errors import UnsupportedModelError
from explorer.core.runtime import from_tensors
from explorer.views.model_graph import model_graph
from tests.core.conftest import BASE, randomize

T = 14
IDS = torch.randint(0, BASE["vocab_size"], (T,), generator=torch.Generator().manual_seed(1))
SIZES = dict(BASE, num_hidden_layers=3, head_dim=16, bos_token_id=1, eos_token_id=2, pad_token_id=0)
CAPPED = dict(attn_logit_softcapping=2.0, final_logit_softcapping=4.0)    # small enough to change the numbers
GEMMA = {"mha": dict(num_key_value_heads=4), "mqa": dict(num_key_value_heads=1, tie_word_embeddings=True)}
GEMMA2 = {
    "window": dict(num_key_value_heads=2, query_pre_attn_scalar=24, sliding_window=5, **CAPPED),
    "no window": dict(num_key_value_heads=2, query_pre_attn_scalar=24, sliding_window=5,    # (transformers' model
                      layer_types=["full_attention"] * 3, **CAPPED),               # needs the key, even unused)
    "uncapped": dict(num_key_value_heads=1, sliding_window=3, attn_logit_softcapping=None,
                     final_logit_softcapping=None, tie_word_embeddings=True,
                     layer_types=["full_attention", "sliding_attention", "sliding_attention"]),
}
CLASSES = {"gemma": ("GemmaConfig", "GemmaForCausalLM"), "gemma2": ("Gemma2Config", "Gemma2ForCausalLM")}


def tiny(family: str, **overrides):
    """A random transformers Gemma (eager attention) of the sizes above, weights spread by conftest.randomize."""
    config_name, model_name = CLASSES[family]
    config = getattr(transformers, config_name)(**{**SIZES, **overrides})
    torch.manual_seed(0)
    model = getattr(transformers, model_name)._from_config(config, attn_implementation="eager")
    randomize(model, 0)
    return model.eval()


def reference(hf):
    with torch.inference_mode():
        return hf(IDS[None], output_attentions=True)


def relative_error(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    return ((ours - theirs).abs().max() / theirs.abs().max()).item()


def check_parity(hf, config_json: dict) -> None:
    """Logits within 1e-4 (relative) and each layer's attention within 1e-5 of transformers', by one forward and
    by prefill then cached steps."""
    loaded = from_tensors(config_json, hf.state_dict(), name=f"tiny-{config_json['model_type']}")
    out = reference(hf)
    capture = StepCapture(loaded.config.n_layers)
    with torch.inference_mode():
        logits = loaded.model.logits(loaded.model(IDS, np.arange(T), None, capture))
    assert relative_error(logits, out.logits[0]) < 1e-4
    for layer, attention in enumerate(out.attentions):
        assert capture.layers[layer].attn.weights.shape == attention[0].shape
        assert (capture.layers[layer].attn.weights - attention[0]).abs().max().item() < 1e-5, f"layer {layer}"
    decoder = make_decoder(loaded, capacity=4)               # a small capacity also makes the caches grow
    decoder.prefill(IDS[:6].numpy())
    for token in IDS[6:]:                                    # the rest of the ids, fed one cached step at a time
        decoder.force(int(token))
        decoder.step()
    for position in range(T):
        assert relative_error(torch.as_tensor(decoder.logits_at(position)), out.logits[0, position]) < 1e-4
    for layer, attention in enumerate(out.attentions):
        np.testing.assert_allclose(decoder.trace.attention(layer), attention[0].numpy(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("case", sorted(GEMMA))
def test_gemma_logits_and_attention_match_transformers(case):
    hf = tiny("gemma", **GEMMA[case])
    check_parity(hf, hf.config.to_dict())


def test_a_gemma_config_with_the_legacy_gelu_runs_the_tanh_approximation_as_transformers_does():
    """The first Gemma releases say hidden_act "gelu"; GemmaConfig replaces it by gelu_pytorch_tanh."""
    hf = tiny("gemma", hidden_act="gelu", **GEMMA["mha"])
    assert hf.config.hidden_act == "gelu_pytorch_tanh"
    check_parity(hf, {**hf.config.to_dict(), "hidden_act": "gelu"})


@pytest.mark.parametrize("case", sorted(GEMMA2))
def test_gemma2_logits_and_attention_match_transformers(case):
    hf = tiny("gemma2", **GEMMA2[case])
    check_parity(hf, hf.config.to_dict())


def test_the_gemma2_caps_change_what_transformers_computes():
    """The parity above could not pass by leaving a cap out: without either cap transformers' numbers move."""
    capped = reference(tiny("gemma2", **GEMMA2["window"]))
    uncapped = reference(tiny("gemma2", **{**GEMMA2["window"], "attn_logit_softcapping": None}))
    assert (capped.attentions[0] - uncapped.attentions[0]).abs().max().item() > 1e-2
    logits_uncapped = reference(tiny("gemma2", **{**GEMMA2["window"], "final_logit_softcapping": None})).logits
    assert relative_error(capped.logits, logits_uncapped) > 1e-2


ABSENT = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=5, num_attention_heads=4)


@pytest.mark.parametrize("family", sorted(CLASSES))
def test_keys_left_out_are_read_as_transformers_reads_them(family):
    """The row's defaults against the config class, and each layer's scale, cap and window against the
    attention modules transformers builds from the same dict."""
    d = {**ABSENT, "model_type": family}
    hf_config = getattr(transformers, CLASSES[family][0]).from_dict(dict(d))
    ours = ModelConfig.from_hf(d)
    assert (ours.n_kv_heads, ours.d_head, ours.max_positions, ours.tie_embeddings, ours.norm_eps) == (
        hf_config.num_key_value_heads, hf_config.head_dim, hf_config.max_position_embeddings,
        hf_config.tie_word_embeddings, hf_config.rms_norm_eps)
    assert ours.rope.theta == hf_config.rope_parameters["rope_theta"]
    assert ours.final_softcap == getattr(hf_config, "final_logit_softcapping", None)
    for layer, block in enumerate(getattr(transformers, CLASSES[family][1])._from_config(hf_config).model.layers):
        attention = block.self_attn
        assert ours.scale_of_layer(layer) == pytest.approx(attention.scaling)
        assert ours.attn_softcap == getattr(attention, "attn_logit_softcapping", None)
        window = getattr(attention, "sliding_window", None)
        assert (ours.layer_kinds[layer], ours.sliding_window if window else None) == (
            "sliding" if window else "causal", window)


@pytest.mark.parametrize("family", sorted(CLASSES))
def test_a_bidirectional_gemma_is_refused_in_one_sentence(family):
    with pytest.raises(UnsupportedModelError, match=rf"^model_type '{family}' with use_bidirectional_attention is an "
                                                    r"encoder; only the causal \(decoding\) Gemma is supported$"):
        ModelConfig.from_hf({**ABSENT, "model_type": family, "use_bidirectional_attention": True})


@pytest.mark.parametrize("family, sandwich", [("gemma", False), ("gemma2", True)])
def test_the_model_map_draws_a_norm_after_each_sublayer_only_where_transformers_has_one(family, sandwich):
    hf = tiny(family, **(GEMMA2["window"] if family == "gemma2" else GEMMA["mqa"]))
    assert hasattr(hf.model.layers[0], "post_feedforward_layernorm") == sandwich       # transformers' block
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name=f"tiny-{family}")
    for config in (dataclasses.asdict(loaded.config), None):                          # with the config or without
        graph = model_graph(loaded.info, config, tokens=T)
        norms = [node for node in graph.of_kind("norm") if node.layers == (0,)]
        assert len(norms) == (4 if sandwich else 2)
        if config:                               # only the config knows the (1 + w)
            assert {node.label.split(" (after)")[0] for node in norms} == {"RMSNorm (1 + w)"}
        windows = [node.attention.window for node in graph.of_kind("attention")]
        assert windows == [getattr(block.self_attn, "sliding_window", None) for block in hf.model.layers]
