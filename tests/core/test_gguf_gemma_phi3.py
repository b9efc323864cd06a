"""GGUF files of Gemma 1, Gemma 2 and Phi-3, written from a random transformers model as llama.cpp's
convert_hf_to_gguf writes them (gemma.* / gemma2.* / phi3.* keys, tensors renamed, Gemma's norms stored as
1 + w, Phi-3's fused projections kept), load into the engine with the logits of transformers.

The reference is transformers loading the same file (`gguf_file=`, which reads gemma2 and phi3 files) and,
for every family, the transformers model the file was written from. Logits agree within 1e-4 (relative).
Gemma 2's file is sized so that the values llama.cpp takes from it (the query scale 1/sqrt(head_dim), the
soft-caps) are also those transformers' GGUF reader assumes (Gemma2Config's 256, 50 and 30).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import transformers  # the reference
from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

from explorer.core.capture import StepCapture
from explorer.core.config import ModelConfig
from explorer.core.loaders import open_checkpoint
from explorer.core.loaders.gguf_config import config_of
from explorer.core.loaders.gguf_header import read_gguf_header
from explorer.core.runtime import load_model
from tests.core.conftest import randomize
from tests.core.tiny_checkpoints import _finish, gguf_name, gguf_writer, sentencepiece_vocab

TOKENS, SCORES, TYPES = sentencepiece_vocab()
T = 12
IDS = torch.randint(4, len(TOKENS), (T,), generator=torch.Generator().manual_seed(3))
SIZES = dict(vocab_size=len(TOKENS), hidden_size=64, intermediate_size=96, num_hidden_layers=3,
             num_attention_heads=4, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0,
             pad_token_id=0, eos_token_id=1, bos_token_id=2)
MODELS = {
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(num_key_value_heads=2, head_dim=16)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(
        num_attention_heads=2, num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256, sliding_window=4,
        attn_logit_softcapping=50.0, final_logit_softcapping=30.0)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(num_key_value_heads=4, tie_word_embeddings=False)),
}
READ_BY_TRANSFORMERS = ("gemma2", "phi3")       # transformers 5's GGUF_SUPPORTED_ARCHITECTURES; not gemma


def tiny(family: str):
    config_name, model_name, sizes = MODELS[family]
    config = getattr(transformers, config_name)(**{**SIZES, **sizes})
    torch.manual_seed(0)
    model = getattr(transformers, model_name)._from_config(config, attn_implementation="eager")
    randomize(model, 0)
    return model.eval()


def write_gguf(path, family: str, hf) -> None:
    """What convert_hf_to_gguf writes for the model: its architecture's keys, a SentencePiece vocabulary, and
    each tensor under its GGUF name (Gemma's norms as 1 + w; a tied head left out)."""
    c = hf.config
    writer = gguf_writer(path, family, c.to_dict())
    writer.add_layer_norm_rms_eps(c.rms_norm_eps)
    writer.add_rope_freq_base(SIZES["rope_theta"])
    if family == "phi3":
        writer.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    else:
        writer.add_key_length(c.head_dim)
        writer.add_value_length(c.head_dim)
    if family == "gemma2":
        writer.add_attn_logit_softcapping(c.attn_logit_softcapping)
        writer.add_final_logit_softcapping(c.final_logit_softcapping)
        writer.add_sliding_window(c.sliding_window)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(TOKENS)
    writer.add_token_scores(SCORES)
    writer.add_token_types(TYPES)
    writer.add_bos_token_id(2)
    writer.add_eos_token_id(1)
    writer.add_unk_token_id(3)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(True)
    # the SentencePiece model's add_dummy_prefix, which the converter copies: Gemma's has none, Llama 2's (Phi-3) one
    writer.add_add_space_prefix(family == "phi3")
    for name, weight in hf.state_dict().items():
        if name == "lm_head.weight" and c.tie_word_embeddings:
            continue
        stored = weight + 1.0 if family.startswith("gemma") and name.endswith("norm.weight") else weight
        writer.add_tensor(gguf_name(family, name), stored.numpy().astype(np.float32))
    _finish(writer)


@pytest.fixture(params=sorted(MODELS))
def written(request, tmp_path):
    family = request.param
    hf = tiny(family)
    path = tmp_path / f"tiny-{family}.gguf"
    write_gguf(path, family, hf)
    return family, hf, path


def transformers_gguf_model(path):
    """transformers' reading of a GGUF file: its config and its tensors, named and converted by
    load_gguf_checkpoint (what from_pretrained(gguf_file=) does, without accelerate's device placement)."""
    config = transformers.AutoConfig.from_pretrained(path.parent, gguf_file=path.name)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict({k: torch.as_tensor(v) for k, v in tensors.items()}, strict=False)
    assert not unexpected and all(name == "lm_head.weight" for name in missing), (missing, unexpected)
    model.tie_weights()
    return model.eval()


def _relative_error(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    return ((ours - theirs).abs().max() / theirs.abs().max()).item()


def _logits(model) -> torch.Tensor:
    with torch.inference_mode():
        return model(IDS[None]).logits[0]


def test_the_engine_runs_the_file_as_transformers_runs_the_model(written):
    family, hf, path = written
    loaded = load_model(str(path))
    assert loaded.config.family == family
    with torch.inference_mode():
        ours = loaded.model.logits(loaded.model(IDS, np.arange(T), None, StepCapture(loaded.config.n_layers)))
    assert _relative_error(ours, _logits(hf)) < 1e-4


@pytest.mark.parametrize("family", READ_BY_TRANSFORMERS)
def test_the_engine_runs_the_file_as_transformers_runs_the_same_file(family, tmp_path):
    hf = tiny(family)
    path = tmp_path / f"tiny-{family}.gguf"
    write_gguf(path, family, hf)
    theirs = transformers_gguf_model(path)
    assert theirs.config.model_type == family
    loaded = load_model(str(path))
    with torch.inference_mode():
        ours = loaded.model.logits(loaded.model(IDS, np.arange(T), None, StepCapture(loaded.config.n_layers)))
    assert _relative_error(ours, _logits(theirs)) < 1e-4
    assert _relative_error(_logits(theirs), _logits(hf)) < 1e-4       # the file holds the model it was written from


def test_the_config_read_from_the_file_is_the_models(written):
    """The GGUF reader gives the ModelConfig that the transformers config.json of the same model gives."""
    family, hf, path = written
    from_file = ModelConfig.from_hf(config_of(read_gguf_header(path), str(path)))
    from_json = ModelConfig.from_hf(hf.config.to_dict())
    if family == "phi3":       # the file keeps no context RoPE was trained for apart from its own
        from_json = dataclasses.replace(from_json, rope=from_file.rope)
    assert from_file.norm_eps == pytest.approx(from_json.norm_eps, rel=1e-7)    # a float32 in the file
    assert from_file == dataclasses.replace(from_json, norm_eps=from_file.norm_eps)


def test_a_gemma2_file_of_another_scale_and_caps_is_read_as_llama_cpp_reads_it(tmp_path):
    """llama.cpp takes the caps from the file and scales queries by 1/sqrt(head_dim) (27B, 46 layers: by
    1/sqrt(d_model / heads)); transformers' GGUF reader would keep Gemma2Config's 256, 50 and 30 instead."""
    hf = tiny("gemma2")
    hf.config.attn_logit_softcapping, hf.config.final_logit_softcapping = 3.0, 5.0
    path = tmp_path / "capped.gguf"
    write_gguf(path, "gemma2", hf)
    config = config_of(read_gguf_header(path), str(path))
    assert (config["attn_logit_softcapping"], config["final_logit_softcapping"]) == (3.0, 5.0)
    assert config["query_pre_attn_scalar"] == hf.config.head_dim
    assert config["layer_types"] == hf.config.layer_types


def test_the_tokenizer_of_the_file_is_transformers_tokenizer_of_it(tmp_path):
    """The SentencePiece vocabulary of a Gemma 2 and a Phi-3 file gives transformers' ids, BOS included."""
    for family in READ_BY_TRANSFORMERS:
        path = tmp_path / f"{family}.gguf"
        write_gguf(path, family, tiny(family))
        theirs = transformers.AutoTokenizer.from_pretrained(tmp_path, gguf_file=path.name)
        ours = open_checkpoint(path).tokenizer
        for text in ("hello world!", "hello  world", "world hello!é"):
            assert list(ours.encode(text).ids) == theirs(text)["input_ids"], (family, text)
