"""`trace --layers` and `trace --attention none`: what a long trace's .npz holds."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.cli import main
from tests.core.tiny_checkpoints import write_hf_folder

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    write_hf_folder(path)
    return path


def _trace(folder, tmp_path, *extra) -> dict:
    out = tmp_path / "trace.npz"
    assert main(["trace", "--model", str(folder), "--prompt", PROMPT, "--steps", "3", "--out", str(out), *extra]) == 0
    with np.load(out, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def test_layers_writes_attention_only_for_the_chosen_layers(folder, tmp_path):
    everything = _trace(folder, tmp_path)
    chosen = _trace(folder, tmp_path, "--layers", "1")
    assert sorted(everything) == ["attn_0", "attn_1", "ids", "kv_bytes", "logits", "tokens"]
    assert sorted(chosen) == ["attn_1", "ids", "kv_bytes", "logits", "tokens"]
    for name in chosen:
        np.testing.assert_array_equal(chosen[name], everything[name])


def test_attention_none_writes_logits_ids_and_kv_bytes_alone(folder, tmp_path):
    everything = _trace(folder, tmp_path)
    bare = _trace(folder, tmp_path, "--attention", "none")
    assert sorted(bare) == ["ids", "kv_bytes", "logits"]
    for name in bare:
        np.testing.assert_array_equal(bare[name], everything[name])


@pytest.mark.parametrize("layers", ["2", "x", "0,-1"])
def test_a_bad_layer_list_is_one_sentence(folder, tmp_path, capsys, layers):
    out = tmp_path / "x.npz"
    assert main(["trace", "--model", str(folder), "--prompt", PROMPT, "--out", str(out), "--layers", layers]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "--layers" in err and "\n" not in err
