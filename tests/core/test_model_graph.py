"""The model map (views.model_graph) against each test family's config.json, as transformers reads it.

Every family's tiny random model is built by the real core (from_tensors, encoder.build, the encoder–
decoder), and its map is checked against the Hugging Face config dict the model came from: the
number of blocks, the attention kind and its grouping N_Q / N_KV, MLA's d_c and d_R, the sliding
layers and their window, the mixture-of-experts layers, cross-attention, and the shapes on the edges.
"""
from __future__ import annotations

import dataclasses

import pytest
import transformers  # the reference configs

from explorer.core import encoder
from explorer.core.runtime import LoadedModel, from_tensors
from explorer.views.model_graph import FOLD_AT, model_graph
from tests.core.conftest import FAMILIES, make_hf_model
from tests.core.test_encdec import tiny_loaded
from tests.core.test_encoder import tiny_bert

T = 7


def _decoder(family: str):
    hf = make_hf_model(family)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name=f"tiny-{family}")
    return loaded, hf.config


def _graph(loaded, **kwargs):
    return model_graph(loaded.info, dataclasses.asdict(loaded.config), tokens=T, **kwargs)


def _expected_kind(hf_config) -> tuple[str, int, int]:
    heads = hf_config.num_attention_heads
    if getattr(hf_config, "kv_lora_rank", None):
        return "MLA", heads, heads
    kv = getattr(hf_config, "num_key_value_heads", None) or heads
    return ("MHA" if kv == heads else "MQA" if kv == 1 else "GQA"), heads, kv


def _sliding_layers(hf_config) -> set[int]:
    """The layers transformers' attention gives a window (layer_types; Mistral: every layer when set)."""
    window = getattr(hf_config, "sliding_window", None)
    if not window:
        return set()
    types = getattr(hf_config, "layer_types", None)
    if types is None:
        return set(range(hf_config.num_hidden_layers)) if hf_config.model_type == "mistral" else set()
    return {i for i, kind in enumerate(types) if kind == "sliding_attention"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_decoder_families_map_like_their_config(family):
    loaded, hf_config = _decoder(family)
    graph = _graph(loaded)
    layers = hf_config.num_hidden_layers
    assert graph.block_layers("decoder") == list(range(layers))
    kind, n_q, n_kv = _expected_kind(hf_config)
    attention = graph.of_kind("attention")
    assert len(attention) == layers and {n.attention.role for n in attention} == {"self"}
    for node in attention:
        spec = node.attention
        assert (spec.kind, spec.n_q, spec.n_kv) == (kind, n_q, n_kv)
        assert kind in node.label and f"N_Q={n_q}" in node.label
        if kind == "GQA":
            assert spec.group == n_q // n_kv and f"{n_q // n_kv} per K/V head" in node.label
        if kind == "MLA":
            assert (spec.latent, spec.rope_dim) == (hf_config.kv_lora_rank, hf_config.qk_rope_head_dim)
            assert f"d_c={hf_config.kv_lora_rank}" in node.label and f"d_R={hf_config.qk_rope_head_dim}" in node.label
        expected_window = hf_config.sliding_window if node.layers[0] in _sliding_layers(hf_config) else None
        assert spec.window == expected_window
        assert ("sliding window" in node.label) == bool(expected_window)
    assert not graph.of_kind("attention", "encoder")
    _check_moe(graph, hf_config)
    _check_shapes(graph, hf_config, kind)


def _check_moe(graph, hf_config) -> None:
    routed = getattr(hf_config, "n_routed_experts", None) or 0
    dense = getattr(hf_config, "first_k_dense_replace", 0) or 0
    moe_layers = [n.layers[0] for n in graph.of_kind("moe")]
    assert moe_layers == ([i for i in range(hf_config.num_hidden_layers) if i >= dense] if routed else [])
    for node in graph.of_kind("moe"):
        assert f"of {routed} experts" in node.label and f"top-{hf_config.num_experts_per_tok}" in node.label
    assert len(graph.of_kind("ffn")) + len(moe_layers) == hf_config.num_hidden_layers


def _check_shapes(graph, hf_config, kind) -> None:
    d = hf_config.hidden_size
    for node in graph.of_kind("attention"):
        (into,) = graph.edges_into(node.key)
        assert (into.names, into.shape) == (("T", "d"), (T, d))
        (out,) = graph.edges_from(node.key)
        d_v = (hf_config.v_head_dim if kind == "MLA"
               else getattr(hf_config, "head_dim", None) or d // hf_config.num_attention_heads)
        assert (out.names, out.shape) == (("N_Q", "T", "d_v"), (hf_config.num_attention_heads, T, d_v))
        assert out.label == f"N_Q×T×d_v = {hf_config.num_attention_heads}×{T}×{d_v}"
    (logits,) = graph.edges_into("softmax")
    assert logits.shape == (T, hf_config.vocab_size)
    adds = graph.of_kind("add")
    assert len(adds) == 2 * hf_config.num_hidden_layers
    for add in adds:           # each residual add joins the sublayer's output and the skip path
        into = graph.edges_into(add.key)
        assert sorted(e.residual for e in into) == [False, True] and all(e.shape == (T, d) for e in into)


def test_bert_is_one_bidirectional_post_norm_stack_without_a_head():
    hf = tiny_bert()
    model, config = encoder.build(hf.config.to_dict(), hf.state_dict(), source="tiny-bert")
    loaded = LoadedModel(model=model, config=config, tokenizer=None, info=encoder.model_info(model, config, "b"),
                         name="b")
    graph = _graph(loaded)
    assert graph.block_layers("decoder") == list(range(hf.config.num_hidden_layers))
    assert {n.attention.role for n in graph.of_kind("attention")} == {"encoder"}
    assert not graph.of_kind("softmax") and not graph.of_kind("final_norm") and graph.of_kind("positions")
    # post-norm: the norm comes after the residual add (Add & Norm)
    first = graph.node("dec.0.encoder.add")
    assert [e.target for e in graph.edges_from(first.key)] == ["dec.0.encoder.norm"]


def test_the_encoder_decoder_shows_both_stacks_and_cross_attention():
    loaded = tiny_loaded()
    config = loaded.config
    graph = model_graph(loaded.info, dataclasses.asdict(config), tokens=4, source_tokens=9)
    assert graph.block_layers("encoder") == list(range(config.n_encoder_layers))
    assert graph.block_layers("decoder") == list(range(config.n_decoder_layers))
    cross = [n for n in graph.of_kind("attention", "decoder") if n.attention.role == "cross"]
    assert [n.layers[0] for n in cross] == list(range(config.n_decoder_layers))
    for node in cross:        # queries from the decoder's T rows, keys and values from the encoder's S
        from_encoder = [e for e in graph.edges_into(node.key) if e.source == "enc.out"]
        assert [(e.names, e.shape) for e in from_encoder] == [(("S", "d"), (9, config.d_model))]
        assert "cross-attention" in node.label and "A: N_Q×T×T = 4×4×9" in node.detail
    encoder_attention = graph.of_kind("attention", "encoder")
    assert {n.attention.role for n in encoder_attention} == {"encoder"}
    assert all(graph.edges_into(n.key)[0].shape == (9, config.d_model) for n in encoder_attention)
    assert graph.node("source").kind == "tokens" and graph.node("tokens").kind == "tokens"


def test_thirty_layers_fold_around_the_selected_block():
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=24,
                                      num_hidden_layers=FOLD_AT + 2, num_attention_heads=4, num_key_value_heads=1,
                                      max_position_embeddings=32)
    hf = transformers.LlamaForCausalLM(config)
    loaded = from_tensors(config.to_dict(), hf.state_dict(), name="deep")
    graph = _graph(loaded, selected_layer=12)
    assert graph.folded and graph.block_layers("decoder") == [12]
    folds = graph.of_kind("fold")
    assert [n.layers for n in folds] == [tuple(range(12)), tuple(range(13, FOLD_AT + 2))]
    assert "12 × block" in folds[0].label and f"{FOLD_AT + 2 - 13} × block" in folds[1].label
    assert graph.of_kind("attention")[0].attention.kind == "MQA"
    assert len(graph.nodes) < 30                     # readable: two folds and one open block
    first = model_graph(loaded.info, None, tokens=T, selected_layer=0)
    assert first.block_layers("decoder") == [0] and len(first.of_kind("fold")) == 1
    below = model_graph(loaded.info, None, tokens=T, fold_at=FOLD_AT + 3)
    assert below.block_layers("decoder") == list(range(FOLD_AT + 2)) and not below.of_kind("fold")


def test_without_the_config_the_map_still_follows_the_model_info():
    loaded, hf_config = _decoder("deepseek_v2")
    graph = model_graph(loaded.info, None, tokens=3)
    assert graph.block_layers("decoder") == list(range(hf_config.num_hidden_layers))
    assert graph.of_kind("attention")[0].attention.latent == hf_config.kv_lora_rank
    assert not graph.of_kind("moe")                  # only the config knows the experts
