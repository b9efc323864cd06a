"""A family's fact is a column of its row (explorer/core/families.py), never a branch on its name elsewhere:
no module compares a family's name (a row's model_type or `reports`) or keeps a list of such names. The
readers shared by two rows take what differs as arguments (DeepSeek V2 / V3), and a multimodal wrapper's
language model is the row's `text_model` column (Gemma 3's text_config)."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import transformers  # the reference

from explorer.core import families
from explorer.core.config import ModelConfig
from explorer.core.trace import ModelInfo
from explorer.views.model_graph import facts_of
from tests.core.conftest import FAMILIES as TINY

ROOT = Path(__file__).resolve().parents[2] / "explorer"
# llama.cpp's tokenizer kinds and pre-tokenizer names ("gpt2", "llama", "smollm") read from a GGUF file are
# not family names, though they are spelled alike (families.py: tokenizer facts are not per family).
TOKENIZER_KINDS = "core/loaders/gguf_tokenizer.py"


def family_names() -> set[str]:
    return set(families.FAMILIES) | {row.reports for row in families.FAMILIES.values() if row.reports}


def name_branches(source: str, names: set[str]) -> list[tuple[int, tuple[str, ...]]]:
    """(line, names) of each comparison naming a family, and each literal list made only of family names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        named: list[str] = []
        if isinstance(node, ast.Compare):
            named = [sub.value for part in (node.left, *node.comparators) for sub in ast.walk(part)
                     if isinstance(sub, ast.Constant) and sub.value in names]
        elif (isinstance(node, ast.Assign) and isinstance(node.value, (ast.Tuple, ast.List, ast.Set))
              and node.value.elts and all(isinstance(e, ast.Constant) and e.value in names for e in node.value.elts)):
            named = [e.value for e in node.value.elts]
        if named:
            found.append((node.lineno, tuple(named)))
    return sorted(found)


def test_the_finder_finds_a_branch_and_a_list_of_names():
    source = ('def f(config):\n    v3 = config.family == "deepseek_v3"\n'
              'LAYER = ("gpt2", "bert")\nOTHER = ("a", "gpt2")\n')
    assert name_branches(source, family_names()) == [(2, ("deepseek_v3",)), (3, ("gpt2", "bert"))]


def test_no_module_branches_on_a_family_name():
    names = family_names()
    found = {(path.relative_to(ROOT).as_posix(), named)
             for path in sorted(ROOT.rglob("*.py")) if path.relative_to(ROOT).as_posix() != TOKENIZER_KINDS
             for _, named in name_branches(path.read_text(encoding="utf-8"), names)}
    assert found == set()


def test_a_wrapper_rows_text_model_is_read_from_its_text_config(monkeypatch):
    """A new multimodal row whose language model is a Llama: ModelConfig.from_hf reads its text_config through
    the row's text_model column alone."""
    kwargs = TINY["llama"][2]
    inner = transformers.LlamaConfig(**kwargs).to_dict()
    monkeypatch.setitem(families.FAMILIES, "toy_vlm", dataclasses.replace(
        families.FAMILIES["gemma3"], model_type="toy_vlm", text_model="llama"))
    config = ModelConfig.from_hf({"model_type": "toy_vlm", "text_config": inner, "vision_config": {}})
    assert config == ModelConfig.from_hf(inner)
    assert (config.family, config.d_model, config.n_kv_heads) == ("llama", kwargs["hidden_size"],
                                                                  kwargs["num_key_value_heads"])


def test_gemma3s_wrapper_is_read_as_its_text_model():
    inner = transformers.Gemma3TextConfig(**TINY["gemma3"][2]).to_dict()
    wrapped = {"model_type": "gemma3", "text_config": {k: v for k, v in inner.items() if k != "model_type"}}
    assert ModelConfig.from_hf(wrapped) == ModelConfig.from_hf(inner)


def test_a_rows_layer_norm_is_what_its_reader_reads_from_transformers_config():
    """The row's layer_norm (what the model map draws without a config: LayerNorm and an MLP, else RMSNorm and
    a gated FFN) agrees with what the row's reader makes of transformers' own default config of that model_type
    (smollm, not in transformers, read as a Llama)."""
    checked = set()
    for model_type, row in families.FAMILIES.items():
        if model_type == "explorer-encdec":      # its own format, not in transformers
            continue
        known = model_type if model_type in transformers.CONFIG_MAPPING else "llama"
        hf = {**transformers.AutoConfig.for_model(known).to_dict(), "model_type": model_type}
        config = ModelConfig.from_hf(hf)
        assert row.layer_norm == (config.norm == "layer") == (config.ffn == "mlp"), model_type
        checked.add(row.layer_norm)
    assert checked == {True, False}


def test_a_new_layer_norm_rows_map_is_drawn_from_its_row_without_a_config(monkeypatch):
    """A new post-norm LayerNorm family (a row alone) is drawn with LayerNorm, an MLP and post-norm blocks by
    the model map of a model opened without its config."""
    monkeypatch.setitem(families.FAMILIES, "toy_ln", dataclasses.replace(
        families.FAMILIES["llama"], model_type="toy_ln", layer_norm=True, post_norm=True))
    info = ModelInfo(name="toy", family="toy_ln", attention="mha", n_layers=2, n_heads=4, n_kv_heads=4, d_model=64,
                     d_qk=16, d_v=16, vocab_size=96, max_positions=64, n_params=0, dtype="float32", device="cpu",
                     layer_kinds=("causal",) * 2)
    facts = facts_of(info)
    assert (facts.norm, facts.ffn, facts.post_norm) == ("LayerNorm", "mlp", True)
    llama = facts_of(dataclasses.replace(info, family="llama"))
    assert (llama.norm, llama.ffn, llama.post_norm) == ("RMSNorm", "gated", False)
