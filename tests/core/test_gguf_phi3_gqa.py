"""A Phi-3 GGUF file with fewer K/V heads than query heads (GQA, as Phi-3-medium's 10 for 40; MQA) runs with
transformers' logits: its fused attn_qkv is split into N_Q d_h, N_KV d_h and N_KV d_h rows as transformers'
Phi3Attention slices qkv_proj. The file is written from a random transformers Phi-3 as convert_hf_to_gguf writes
it (tests/core/test_gguf_gemma_phi3.py), and read back also by transformers' own GGUF reader."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers  # the reference

from explorer.core.capture import StepCapture
from explorer.core.runtime import load_model
from tests.core.conftest import randomize
from tests.core.test_gguf_gemma_phi3 import IDS, SIZES, T, _logits, _relative_error, transformers_gguf_model, write_gguf


def tiny_phi3(kv_heads: int) -> torch.nn.Module:
    config = transformers.Phi3Config(**{**SIZES, "num_key_value_heads": kv_heads, "tie_word_embeddings": False})
    torch.manual_seed(0)
    model = transformers.Phi3ForCausalLM._from_config(config, attn_implementation="eager")
    randomize(model, 0)
    return model.eval()


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_a_phi3_file_with_fewer_kv_heads_runs_as_transformers(kv_heads, tmp_path):
    hf = tiny_phi3(kv_heads)
    assert hf.config.num_key_value_heads < hf.config.num_attention_heads
    path = tmp_path / f"tiny-phi3-kv{kv_heads}.gguf"
    write_gguf(path, "phi3", hf)
    loaded = load_model(str(path))
    assert (loaded.config.n_heads, loaded.config.n_kv_heads) == (hf.config.num_attention_heads, kv_heads)
    with torch.inference_mode():
        ours = loaded.model.logits(loaded.model(IDS, np.arange(T), None, StepCapture(loaded.config.n_layers)))
    assert _relative_error(ours, _logits(hf)) < 1e-4
    theirs = transformers_gguf_model(path)
    assert theirs.config.num_key_value_heads == kv_heads
    assert _relative_error(ours, _logits(theirs)) < 1e-4
