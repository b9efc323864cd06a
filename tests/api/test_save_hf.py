"""model.save_hf(folder) loads in transformers (AutoModelForCausalLM) with logits equal within 1e-4."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import explorer
from tests.api.test_match_hf import PROMPT


def hf_logits(folder, ids) -> np.ndarray:
    loaded = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    with torch.inference_mode():
        return loaded.eval()(torch.as_tensor(ids)[None]).logits[0].numpy()


@pytest.mark.parametrize("family", ["llama", "llama_mqa", "mistral", "qwen2", "qwen3", "gpt2"])
def test_a_saved_tiny_model_gives_the_same_logits_in_transformers(family, model, tmp_path):
    run = model.run(PROMPT)
    model.save_hf(tmp_path / "saved")
    expected = hf_logits(tmp_path / "saved", run.ids)
    assert np.abs(run.logits - expected).max() / np.abs(expected).max() < 1e-4


@pytest.mark.parametrize("family", ["deepseek_v2"])
def test_a_family_it_does_not_write_is_refused_in_one_sentence(family, model, tmp_path):
    with pytest.raises(explorer.ExplorerError, match="save_hf writes"):
        model.save_hf(tmp_path / "saved")


@pytest.mark.realmodel
def test_smollm2_from_gguf_saved_loads_in_transformers_with_equal_logits(tmp_path):
    from explorer.core.store import pulled_path

    if pulled_path("smollm2-135m") is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    model = explorer.load("smollm2-135m")
    run = model.run("When Mary and John went to the store, John gave a drink to")
    folder = model.save_hf(tmp_path / "smollm2")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    expected = hf_logits(folder, run.ids)
    assert np.abs(run.logits - expected).max() / np.abs(expected).max() < 1e-4
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    assert tokenizer(" Mary", add_special_tokens=False).input_ids == [model.to_single_token(" Mary")]
