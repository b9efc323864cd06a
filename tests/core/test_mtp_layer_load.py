"""A DeepSeek-V3 checkpoint ships a multi-token-prediction layer after its decoding layers
(model.layers.{n}.enorm, hnorm, eh_proj, shared_head and a block's own tensors). Such a folder loads
through the public loader, its extra layer counted against nothing and skipped, and gives the logits of
the same folder without it. Reference: transformers' DeepseekV3ForCausalLM on the same weights."""
from __future__ import annotations

import json

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, models

import explorer
from tests.core.conftest import make_hf_model
from tests.core.test_family_row_facts import _with_mtp_layer


def _folder(path, config: dict, tensors: dict[str, torch.Tensor]):
    """An HF folder: config.json, model.safetensors and a word-level tokenizer.json over the vocabulary."""
    path.mkdir()
    vocab = {f"w{i}": i for i in range(config["vocab_size"])}
    Tokenizer(models.WordLevel(vocab, unk_token="w0")).save(str(path / "tokenizer.json"))
    (path / "config.json").write_text(json.dumps(config))
    save_file({name: tensor.detach().clone().contiguous() for name, tensor in tensors.items()},
              str(path / "model.safetensors"))
    return path


def _logits(model, ids: np.ndarray) -> torch.Tensor:
    with torch.no_grad():
        return model.logits(model(torch.as_tensor(ids), np.arange(len(ids))))


def test_a_deepseek_v3_folder_with_its_mtp_layer_loads_and_gives_the_logits_without_it(tmp_path):
    hf_model = make_hf_model("deepseek_v3")
    config = hf_model.config.to_dict()
    n = hf_model.config.num_hidden_layers
    with_mtp = _with_mtp_layer(hf_model)
    assert any(name.startswith(f"model.layers.{n}.eh_proj") for name in with_mtp)
    plain = explorer.load(_folder(tmp_path / "plain", config, hf_model.state_dict())).loaded
    mtp = explorer.load(_folder(tmp_path / "mtp", config, with_mtp)).loaded
    assert mtp.config.n_layers == n
    ids = np.random.default_rng(0).integers(0, hf_model.config.vocab_size, size=12)
    with torch.no_grad():
        expected = hf_model(torch.as_tensor(ids)[None]).logits[0]
    got = _logits(mtp.model, ids)
    torch.testing.assert_close(got, _logits(plain.model, ids), rtol=0, atol=0)
    assert ((got - expected).abs().max() / expected.abs().max()).item() < 1e-4
