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
from tests.core.conftest import FAMILIES as TINY

ROOT = Path(__file__).resolve().parents[2] / "explorer"
# llama.cpp's tokenizer kinds and pre-tokenizer names ("gpt2", "llama", "smollm") read from a GGUF file are
# not family names, though they are spelled alike (families.py: tokenizer facts are not per family).
TOKENIZER_KINDS = "core/loaders/gguf_tokenizer.py"
# Branches left in modules this change did not own, each with the row column that replaces it
# (see the issue 25 audit): hf_keys' deepseek writer, model_summary.text_config (-> families.text_config),
# the model map's norm and post-norm guesses for a model opened without its config.
LEFT_ELSEWHERE = {
    ("core/hf_keys.py", ("deepseek_v3",)),
    ("core/model_summary.py", ("gemma3",)),
    ("views/model_graph.py", ("gpt2", "bert", "encdec")),
    ("views/model_graph.py", ("bert", "encdec")),
}


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
    assert found - LEFT_ELSEWHERE == set()


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
