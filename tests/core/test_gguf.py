"""GGUF: a file written with gguf's own writer (as llama.cpp's converter would) loads back to the HF weights."""
from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch
import transformers  # the reference

from explorer.core import store
from explorer.core.loaders import open_checkpoint
from explorer.core.loaders.gguf import permute_rows, unpermute_rows
from explorer.core.loaders.gguf_header import read_gguf_header
from tests.core.tiny_checkpoints import CORPUS, write_gemma3_gguf, write_hf_folder, write_llama_gguf

Q = gguf.GGMLQuantizationType
TEXTS = CORPUS + ["", "  leading spaces\n\n\ttabs", "The capital of France is"]


def test_unpermute_inverts_the_converters_permutation():
    weight = torch.arange(6 * 8 * 3, dtype=torch.float32).reshape(6 * 8, 3)
    permuted = permute_rows(weight, heads=6)
    assert not torch.equal(permuted, weight)
    assert torch.equal(unpermute_rows(permuted, heads=6), weight)
    # Within a head, the converter interleaves the two rotate-half halves: rows 0, 4, 1, 5, ...
    assert permuted[:8, 0].tolist() == [0, 12, 3, 15, 6, 18, 9, 21]


@pytest.fixture
def llama_pair(tmp_path):
    folder = tmp_path / "tiny-llama"
    config, tensors = write_hf_folder(folder)
    path = tmp_path / "tiny-llama.gguf"
    from tokenizers import Tokenizer

    write_llama_gguf(path, config, tensors, Tokenizer.from_file(str(folder / "tokenizer.json")))
    return open_checkpoint(folder), open_checkpoint(path)


def test_llama_gguf_matches_the_safetensors_weights(llama_pair):
    hf, gg = llama_pair
    assert gg.format == "gguf" and hf.format == "hf"
    assert sorted(gg.tensors) == sorted(hf.tensors)
    for name, weight in hf.tensors.items():
        assert gg.tensors[name].dtype == torch.float32
        assert torch.equal(gg.tensors[name], weight), name


def test_llama_gguf_config_matches(llama_pair):
    hf, gg = llama_pair
    for key in ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings", "tie_word_embeddings"):
        assert gg.hf_config[key] == hf.hf_config[key], key
    assert gg.hf_config["rms_norm_eps"] == pytest.approx(hf.hf_config["rms_norm_eps"])
    assert gg.hf_config["rope_theta"] == pytest.approx(hf.hf_config["rope_theta"])


def test_llama_gguf_tokenizer_matches_tokenizer_json(llama_pair):
    hf, gg = llama_pair
    for text in TEXTS:
        a, b = hf.tokenizer.encode(text), gg.tokenizer.encode(text)
        assert a.ids.tolist() == b.ids.tolist(), text
        assert a.text == b.text and a.spans == b.spans
    assert gg.tokenizer.eos_id == 0 and not gg.tokenizer.add_bos


def test_quantized_tensors_are_dequantized_close_to_the_original(tmp_path):
    folder = tmp_path / "m"
    config, tensors = write_hf_folder(folder)
    from tokenizers import Tokenizer

    quant = {"model.layers.0.mlp.gate_proj.weight": Q.Q8_0, "model.layers.1.mlp.up_proj.weight": Q.F16,
             "model.layers.0.self_attn.q_proj.weight": Q.Q8_0}
    path = tmp_path / "q.gguf"
    write_llama_gguf(path, config, tensors, Tokenizer.from_file(str(folder / "tokenizer.json")), quant)
    types = {t.name: t.type_id for t in read_gguf_header(path).tensors}
    assert types["blk.0.ffn_gate.weight"] == Q.Q8_0 and types["blk.1.ffn_up.weight"] == Q.F16
    loaded = open_checkpoint(path).tensors
    for name in quant:
        assert loaded[name].shape == tensors[name].shape
        torch.testing.assert_close(loaded[name], tensors[name], atol=0.01, rtol=0.01)


def test_gemma3_gguf_norms_and_config(tmp_path):
    path = tmp_path / "tiny-gemma3.gguf"
    tensors = write_gemma3_gguf(path)
    checkpoint = open_checkpoint(path)
    assert sorted(checkpoint.tensors) == sorted(tensors)
    for name, weight in tensors.items():  # norms back from (1 + w); Q/K not permuted
        torch.testing.assert_close(checkpoint.tensors[name], weight, atol=1e-6, rtol=0)
    config = checkpoint.hf_config
    assert config["model_type"] == "gemma3_text" and config["head_dim"] == 16
    assert config["layer_types"] == ["sliding_attention"] * 5 + ["full_attention"]
    assert config["sliding_window"] == 8 and config["query_pre_attn_scalar"] == 16
    assert config["rope_local_base_freq"] == 10000.0 and config["rope_theta"] == 1_000_000.0
    assert config["tie_word_embeddings"] is True and config["num_key_value_heads"] == 1


def test_gemma3_sentencepiece_tokenizer(tmp_path):
    path = tmp_path / "tiny-gemma3.gguf"
    write_gemma3_gguf(path)
    tokenizer = open_checkpoint(path).tokenizer
    tokens = tokenizer.encode("hello world!é")
    assert tokens.text == ("<bos>", "hello", "␣world", "!", "<0xC3>", "<0xA9>")
    assert tokens.special.tolist() == [True] + [False] * 5
    assert b"".join(tokens.raw) == "hello world!é".encode()
    assert tokenizer.decode(tokens.ids[1:]) == "hello world!é"
    assert tokenizer.encode("<start_of_turn>hello").text == ("<bos>", "<start_of_turn>", "hello")


def _real(name):
    path = store.pulled_path(name)
    if path is None:
        pytest.skip(f"{name} is not pulled (python -m explorer pull {name})")
    return path


@pytest.mark.realmodel
def test_real_smollm2_tokenizer_and_shapes():
    header = read_gguf_header(_real("smollm2-135m"))
    assert header.architecture == "llama" and header.get("attention.head_count_kv") == 3
    checkpoint = open_checkpoint(_real("smollm2-135m"))
    tokens = checkpoint.tokenizer.encode("The capital of France is")
    assert tokens.ids.tolist() == [504, 3575, 282, 4649, 314]
    assert tokens.text == ("The", "␣capital", "␣of", "␣France", "␣is")
    assert checkpoint.tensors["model.layers.0.self_attn.k_proj.weight"].shape == (192, 576)
    assert checkpoint.hf_config["tie_word_embeddings"] is True


def _transformers_next_token_probs(checkpoint, text: str) -> torch.Tensor:
    """transformers' own Llama on the un-permuted GGUF weights: p(next token | text), (V,)."""
    config = dict(checkpoint.hf_config)
    hf_config = transformers.LlamaConfig(**{k: v for k, v in config.items() if k != "model_type"})
    model = transformers.LlamaForCausalLM(hf_config).eval()
    model.load_state_dict(checkpoint.tensors, strict=False)
    model.tie_weights()
    ids = torch.tensor(checkpoint.tokenizer.encode(text).ids)[None]
    with torch.no_grad():
        return torch.softmax(model(ids).logits[0, -1].double(), dim=-1)


@pytest.mark.realmodel
@pytest.mark.slow
def test_real_smollm2_says_paris_in_transformers():
    """The un-permuted GGUF weights in transformers' own Llama give ' Paris' (proves the Q/K permutation)."""
    checkpoint = open_checkpoint(_real("smollm2-135m"))
    probs = _transformers_next_token_probs(checkpoint, "The capital of France is")
    assert checkpoint.tokenizer.display(int(probs.argmax())) == "␣Paris"


@pytest.mark.realmodel
@pytest.mark.slow
def test_real_smollm2_engine_says_paris_with_the_readmes_probability():
    """The README's claim, run through the engine: ' Paris' (p = 0.77), the probability transformers gives."""
    from explorer.core.decode import Decoder
    from explorer.core.runtime import load_model

    checkpoint = open_checkpoint(_real("smollm2-135m"))
    trace = Decoder(load_model(checkpoint)).prefill(checkpoint.tokenizer.encode("The capital of France is"))
    step = trace.steps[0]
    assert checkpoint.tokenizer.display(step.chosen_id) == "␣Paris"
    assert int(step.top_ids[0, 0]) == step.chosen_id and round(float(step.top_probs[0, 0]), 2) == 0.77
    reference = _transformers_next_token_probs(checkpoint, "The capital of France is")
    assert abs(float(step.top_probs[0, 0]) - float(reference[step.chosen_id])) < 1e-3


@pytest.mark.realmodel
@pytest.mark.slow
def test_real_gemma3_tokenizer_and_norm_convention():
    checkpoint = open_checkpoint(_real("gemma3-270m"))
    assert checkpoint.tokenizer.encode("The capital of France is").ids.tolist() == [2, 818, 5279, 529, 7001, 563]
    config = checkpoint.hf_config
    assert config["layer_types"][:6] == ["sliding_attention"] * 5 + ["full_attention"]
    assert config["num_key_value_heads"] == 1 and config["head_dim"] == 256
    # HF Gemma norms hold w with x * (1 + w): the stored (1 + w) would average far above 1 here.
    assert float(np.mean(checkpoint.tensors["model.layers.0.input_layernorm.weight"].numpy())) < 20


def test_header_reader_agrees_with_gguf_reader(tmp_path):
    """Our strict header reader (used for speed) reads what gguf.GGUFReader reads."""
    path = tmp_path / "tiny-gemma3.gguf"
    write_gemma3_gguf(path)
    ours = read_gguf_header(path, keep_arrays=True)
    theirs = gguf.GGUFReader(path)
    for key, field in theirs.fields.items():
        if not key.startswith("GGUF."):
            expected = field.contents()
            assert ours.metadata[key] == (pytest.approx(expected) if isinstance(expected, float) else expected), key
    assert [(t.name, t.shape) for t in ours.tensors] == [(t.name, tuple(int(d) for d in reversed(t.shape)))
                                                           for t in theirs.tensors]
    assert [t.offset for t in ours.tensors] == [int(t.data_offset) for t in theirs.tensors]  # absolute offsets


def test_a_tensor_is_dequantized_a_chunk_of_rows_at_a_time_with_progress_between(tmp_path, monkeypatch):
    """A load's progress (which raises to cancel it) is called within a tensor, between chunks of its rows, and the
    chunks give the values gguf dequantizes from the whole tensor at once: Gemma 3's token embedding, one call,
    kept a Cancel waiting up to 20 s."""
    from explorer.core.loaders import gguf as gguf_loader
    from explorer.core.loaders.gguf_header import tensor_bytes

    folder = tmp_path / "m"
    config, tensors = write_hf_folder(folder)
    from tokenizers import Tokenizer

    path = tmp_path / "q.gguf"
    write_llama_gguf(path, config, tensors, Tokenizer.from_file(str(folder / "tokenizer.json")),
                     {"model.embed_tokens.weight": Q.Q8_0})
    header = read_gguf_header(path)
    index, info = next((i, t) for i, t in enumerate(header.tensors) if t.name == "token_embd.weight")
    rows, width = int(np.prod(info.shape[:-1])), int(info.shape[-1])
    data = np.memmap(path, mode="r", dtype=np.uint8)
    raw = data[info.offset:info.offset + tensor_bytes(info, str(path))]
    whole = gguf.quants.dequantize(raw.reshape(rows, -1), Q(info.type_id)).reshape(info.shape)
    monkeypatch.setattr(gguf_loader, "CHUNK_VALUES", 3 * width)          # three rows a chunk
    seen = []
    chunked = gguf_loader._dequantize(data, info, str(path), seen.append)
    np.testing.assert_array_equal(chunked.numpy(), whole)
    assert seen == [start / rows for start in range(3, rows, 3)]

    calls = []
    gguf_loader.read_tensors(path, header, open_checkpoint(path).hf_config, lambda share, text: calls.append(share))
    sizes = [int(np.prod(t.shape)) for t in header.tensors]      # the bar counts values, not tensors
    before, total = sum(sizes[:index]), sum(sizes)
    within = [share for share in calls if before / total < share < (before + sizes[index]) / total]
    assert len(within) == len(range(3, rows, 3)), "no progress (and so no Cancel) within the token embedding"
