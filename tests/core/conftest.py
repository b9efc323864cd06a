"""Tiny random transformers models, built in memory and seeded, one per family.

transformers is the reference only: tests compare our engine with its eager
attention in float32. Weights are re-drawn with a larger spread than the
library's init so that attention is far from uniform and errors would show.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import transformers  # the reference: a missing one fails collection, never skips the core tests

import explorer
from explorer.core import store
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.runtime import from_tensors
from tests.core.tiny_checkpoints import CORPUS, LLAMA_CONFIG, write_hf_folder

VOCAB = 96
BASE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=64, tie_word_embeddings=False)

FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(
        BASE, num_key_value_heads=2,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 16}, rope_theta=500.0)),
    "llama_mqa": ("LlamaConfig", "LlamaForCausalLM", dict(BASE, num_key_value_heads=1, tie_word_embeddings=True)),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(BASE, num_key_value_heads=2, sliding_window=5)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(BASE, num_key_value_heads=2, tie_word_embeddings=True)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(BASE, num_key_value_heads=2, head_dim=24)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64)),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        BASE, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24, sliding_window=5,
        layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=True)),
    "deepseek_v2": ("DeepseekV2Config", "DeepseekV2ForCausalLM", dict(
        BASE, num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=16, qk_nope_head_dim=12, qk_rope_head_dim=8,
        v_head_dim=10, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
        first_k_dense_replace=1, topk_method="greedy", head_dim=8)),
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM", dict(
        BASE, num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=12, qk_rope_head_dim=8,
        v_head_dim=10, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
        first_k_dense_replace=1, n_group=2, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.0,
        rope_interleave=True)),
}


def randomize(model: torch.nn.Module, seed: int) -> None:
    """Spread every weight (norms around their neutral value) so that errors cannot hide."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
            if not tensor.is_floating_point() or "inv_freq" in name or "embed_scale" in name:
                continue
            noise = torch.randn(tensor.shape, generator=generator)
            if "norm" in name or "ln_" in name:
                neutral = 0.0 if ("gemma" in type(model).__name__.lower() or name.endswith("bias")) else 1.0
                tensor.copy_(neutral + 0.1 * noise)
            else:
                tensor.copy_(0.15 * noise)


def make_hf_model(family: str, seed: int = 0):
    config_name, model_name, kwargs = FAMILIES[family]
    config = getattr(transformers, config_name)(**kwargs)
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)._from_config(config, attn_implementation="eager")
    randomize(model, seed)
    return model.eval()


@pytest.fixture(params=sorted(FAMILIES))
def family(request) -> str:
    return request.param


@pytest.fixture
def hf_model(family):
    return make_hf_model(family)


@pytest.fixture
def loaded(hf_model, family):
    return from_tensors(hf_model.config.to_dict(), hf_model.state_dict(), name=f"tiny-{family}")


LONG_LLAMA_TOKENS = 8000
MIN_TOKENS = 1024            # ON_DEMAND_FROM = 1,024 x 1,024 entries: a prompt this long is rebuilt on demand
FORCED = 17                  # the token `original` forces at its third step


@pytest.fixture
def own_home(tmp_path, monkeypatch):
    """The model store in the test's folder: nothing may touch the user's store (a module asks for it with
    `pytestmark = pytest.mark.usefixtures("own_home")`)."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    """A random tiny llama (2 layers, 4/2 heads) whose context holds a long prompt and a few steps."""
    folder = tmp_path_factory.mktemp("long-llama")
    write_hf_folder(folder, dict(LLAMA_CONFIG, max_position_embeddings=2048), seed=3)
    return explorer.load(folder)


def long_prompt(model) -> str:
    text, paragraph = "", "\n".join(CORPUS) + "\n"
    while len(model.loaded.tokenizer.encode(text).ids) < MIN_TOKENS + 40:
        text += paragraph
    return text


@pytest.fixture(scope="module")
def original(long_model):
    """prefill a long prompt, step, force a token, step: the run the session file describes."""
    return long_model.run(long_prompt(long_model), steps=1).step().force(FORCED).step()


@pytest.fixture(scope="module")
def long_llama():
    """A tiny random Llama (its transformers model), its Decoder after a LONG_LLAMA_TOKENS prompt, and the ids."""
    n = LONG_LLAMA_TOKENS
    hf_model = make_hf_model("llama")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=n + 16), hf_model.state_dict())
    decoder = Decoder(loaded, RecordOptions(), capacity=n + 8)
    ids = (np.arange(n) * 7 + 3) % 96
    decoder.prefill(ids)
    return hf_model, decoder, ids


@pytest.fixture(scope="module")
def minilm_folder() -> Path:
    """The real all-MiniLM-L6-v2 folder in the store (`make test` pulls it: python -m explorer pull minilm-l6)."""
    path = store.pulled_path("minilm-l6")
    if path is None:
        pytest.skip("minilm-l6 is not pulled (python -m explorer pull minilm-l6)")
    return path
