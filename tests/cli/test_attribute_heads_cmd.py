"""`attribute` and `heads` on a tiny llama folder, checked against transformers reading the same folder."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers

from explorer import cli
from tests.core.tiny_checkpoints import write_hf_folder

PROMPT = "The capital of France is Paris."


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tiny-llama"
    write_hf_folder(path)
    return path


@pytest.fixture(scope="module")
def hf_model(folder):
    return transformers.LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()


@pytest.fixture
def main(monkeypatch):
    monkeypatch.setattr(cli, "SUBCOMMANDS", {name: cli.SUBCOMMANDS[name] for name in ("attribute", "heads")})
    return cli.main


def _json(main, capsys, *args):
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _ids(folder) -> list[int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json")).encode(PROMPT).ids


def test_attribute_sums_to_the_logit_transformers_computes(main, capsys, folder, hf_model):
    out = _json(main, capsys, "attribute", "--model", str(folder), "--prompt", PROMPT)
    ids = _ids(folder)
    with torch.inference_mode():
        logits = hf_model(torch.tensor(ids)[None]).logits[0]
    assert out["position"] == len(ids) - 1
    assert out["token_id"] == int(logits[-1].argmax())
    assert out["logit"] == pytest.approx(float(logits[-1].max()), abs=1e-4)
    heads = np.array(out["heads"])
    assert heads.shape == (hf_model.config.num_hidden_layers, hf_model.config.num_attention_heads)
    assert len(out["mlp"]) == hf_model.config.num_hidden_layers
    assert out["embed"] + heads.sum() + sum(out["mlp"]) + out["rest"] == pytest.approx(out["logit"], abs=1e-4)


def test_attribute_at_a_position_for_a_chosen_token(main, capsys, folder, hf_model):
    out = _json(main, capsys, "attribute", "--model", str(folder), "--prompt", PROMPT, "--position", "2",
                "--token-id", "17")
    with torch.inference_mode():
        logit = float(hf_model(torch.tensor(_ids(folder))[None]).logits[0, 2, 17])
    assert (out["position"], out["token_id"]) == (2, 17)
    assert out["logit"] == pytest.approx(logit, abs=1e-4)
    assert out["embed"] + np.sum(out["heads"]) + sum(out["mlp"]) + out["rest"] == pytest.approx(logit, abs=1e-4)


def test_heads_match_the_definitions_on_transformers_attentions(main, capsys, folder, hf_model):
    ids = [5, 90, 33, 7, 120, 64]
    out = _json(main, capsys, "heads", "--model", str(folder), "--ids", ",".join(map(str, ids)), "--repeat", "3")
    with torch.inference_mode():
        attentions = hf_model(torch.tensor(ids * 3)[None], output_attentions=True).attentions
    n, t = len(ids), 3 * len(ids)
    for layer, a in enumerate(attentions):
        a = a[0].double().numpy()
        for head in range(a.shape[0]):
            assert out["previous_token"][layer][head] == pytest.approx(
                np.mean([a[head, i, i - 1] for i in range(1, t)]), abs=1e-5)
            assert out["induction"][layer][head] == pytest.approx(
                np.mean([a[head, i, i - n + 1] for i in range(n, t)]), abs=1e-5)
            assert out["sink"][layer][head] == pytest.approx(np.mean([a[head, i, 0] for i in range(1, t)]), abs=1e-5)


def test_heads_on_random_ids_are_seeded(main, capsys, folder):
    first = _json(main, capsys, "heads", "--model", str(folder))
    again = _json(main, capsys, "heads", "--model", str(folder))
    other = _json(main, capsys, "heads", "--model", str(folder), "--seed", "1")
    assert first == again and first != other
    assert set(first) == {"previous_token", "induction", "sink"}
    assert np.array(first["sink"]).shape == (2, 4) and 0 <= np.min(first["sink"]) <= np.max(first["sink"]) <= 1


def test_the_plain_table_names_the_token_and_the_sum(main, capsys, folder):
    assert main(["attribute", "--model", str(folder), "--prompt", PROMPT]) == 0
    text = capsys.readouterr().out
    assert "logit of" in text and "sum" in text and "L1.H" in text


@pytest.mark.parametrize("args, message", [
    (["attribute", "--prompt", PROMPT, "--position", "99"], "position 99 is out of range"),
    (["attribute", "--prompt", PROMPT, "--token-id", "100000"], "token id 100000 is outside"),
    (["attribute", "--prompt", ""], "--prompt is empty"),
    (["heads", "--ids", "1,two,3"], "'two', which is not a token id"),
    (["heads", "--ids", "1,\u00b2"], "'\u00b2', which is not a token id"),     # a digit to str.isdigit, not to int
    (["heads", "--ids", "1,2", "--repeat", "1"], "--repeat: 1 is not between 2"),
    (["heads", "--ids", "1,99999"], "token id 99999 is outside"),
    # tiled before the context was checked: 10^8 repeats allocated 24 GB and ended in a traceback (boundary27)
    (["heads", "--ids", "1,2,3", "--repeat", "2000000000"], "are 6,000,000,000 tokens, more than the model's context"),
])
def test_bad_input_exits_2_with_one_sentence(main, capsys, folder, args, message):
    assert main([args[0], "--model", str(folder), *args[1:], "--json"]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1 and "Traceback" not in error
