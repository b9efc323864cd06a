"""Two family facts that lived outside the row now live in it (families.ModelFamily): where positions enter
(`positional`: only a RoPE family's rotary fraction is checked) and whether a checkpoint holds
multi-token-prediction layers after the decoding ones (`mtp_layers`: DeepSeek-V3's, skipped on load).
A new row with either fact needs nothing else; the references are transformers' models and configs."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import transformers  # the reference

from explorer.core import families
from explorer.core.config import ModelConfig
from explorer.core.config_schema import check_config
from explorer.core.errors import InvalidConfigError, ModelLoadError
from explorer.core.weights import map_weights
from tests.core.conftest import make_hf_model

HALF_ROTARY = "partial_rotary_factor 0.5 rotates only part of each head"


@pytest.mark.parametrize("model_type, positional", [
    ("llama", "rope"), ("gemma3_text", "rope"), ("deepseek_v3", "rope"),
    ("gpt2", "learned"), ("bert", "learned"), ("explorer-encdec", "sinusoidal")])
def test_each_row_says_how_positions_enter(model_type, positional):
    assert families.FAMILIES[model_type].positional == positional


def test_the_config_readers_take_positions_from_the_row():
    """GPT-2 and BERT learn a position table (transformers: wpe, position_embeddings); Llama rotates."""
    gpt2 = make_hf_model("gpt2")
    assert isinstance(gpt2.transformer.wpe, torch.nn.Embedding)
    assert ModelConfig.from_hf(gpt2.config.to_dict()).positional == "learned"
    bert = transformers.BertConfig(vocab_size=96, hidden_size=64, num_hidden_layers=1, num_attention_heads=4,
                                   intermediate_size=96).to_dict()
    assert ModelConfig.from_hf(bert).positional == "learned"
    assert ModelConfig.from_hf(make_hf_model("llama").config.to_dict()).positional == "rope"


def test_only_a_rope_row_has_its_rotary_fraction_checked(monkeypatch):
    with pytest.raises(InvalidConfigError, match=HALF_ROTARY):
        check_config({"model_type": "llama", "partial_rotary_factor": 0.5})
    check_config({"model_type": "gpt2", "partial_rotary_factor": 0.5})          # learned positions: nothing to rotate
    with pytest.raises(InvalidConfigError, match=HALF_ROTARY):
        check_config({"model_type": "unheard_of", "partial_rotary_factor": 0.5})  # no row: checked
    monkeypatch.setitem(families.FAMILIES, "learned_llama",
                        replace(families.FAMILIES["llama"], model_type="learned_llama", positional="learned"))
    check_config({"model_type": "learned_llama", "partial_rotary_factor": 0.5})  # the row alone decides


def _with_mtp_layer(hf_model) -> dict[str, torch.Tensor]:
    """The model's weights plus one multi-token-prediction layer at index n_layers, as DeepSeek-V3 ships it:
    a copy of the last block and the MTP module's own tensors (enorm, hnorm, eh_proj, shared_head)."""
    tensors = dict(hf_model.state_dict())
    last, n = hf_model.config.num_hidden_layers - 1, hf_model.config.num_hidden_layers
    d = hf_model.config.hidden_size
    for name, tensor in list(tensors.items()):
        if name.startswith(f"model.layers.{last}."):
            tensors[name.replace(f"layers.{last}.", f"layers.{n}.", 1)] = tensor.clone()
    tensors.update({f"model.layers.{n}.enorm.weight": torch.ones(d), f"model.layers.{n}.hnorm.weight": torch.ones(d),
                    f"model.layers.{n}.eh_proj.weight": torch.zeros(d, 2 * d),
                    f"model.layers.{n}.shared_head.norm.weight": torch.ones(d)})
    return tensors


def _mapped(family: str, tensors: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    return map_weights(family, tensors, n_layers, "tiny")


def test_a_deepseek_v3_mtp_layer_is_skipped_and_the_rest_mapped_as_without_it():
    hf_model = make_hf_model("deepseek_v3")
    n = hf_model.config.num_hidden_layers
    plain = _mapped("deepseek_v3", dict(hf_model.state_dict()), n)
    with_mtp = _mapped("deepseek_v3", _with_mtp_layer(hf_model), n)
    assert sorted(with_mtp) == sorted(plain) and all(torch.equal(with_mtp[k], plain[k]) for k in plain)
    assert not any(name.startswith(f"layers.{n}.") for name in with_mtp)


def test_the_mtp_skip_is_the_rows_fact(monkeypatch):
    """Without the column the same extra layer is refused; a row that sets it skips it, whatever its model_type."""
    hf_model = make_hf_model("deepseek_v3")
    row = families.FAMILIES["deepseek_v3"]
    monkeypatch.setitem(families.FAMILIES, "deepseek_v3", replace(row, mtp_layers=False))
    with pytest.raises(ModelLoadError, match="layers.2.enorm.weight"):
        _mapped("deepseek_v3", _with_mtp_layer(hf_model), hf_model.config.num_hidden_layers)
    v2 = make_hf_model("deepseek_v2")
    monkeypatch.setitem(families.FAMILIES, "deepseek_v2", replace(families.FAMILIES["deepseek_v2"], mtp_layers=True))
    n = v2.config.num_hidden_layers
    assert sorted(_mapped("deepseek_v2", _with_mtp_layer(v2), n)) == sorted(_mapped("deepseek_v2", v2.state_dict(), n))
