"""The trace and bench commands on a tiny llama folder written by the test."""
from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.cli import main
from tests.core.tiny_checkpoints import write_hf_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    write_hf_folder(path)
    return path


def test_trace_writes_the_documented_arrays(folder, tmp_path):
    out = tmp_path / "trace.npz"
    assert main(["trace", "--model", str(folder), "--prompt", "The capital of France is", "--steps", "5",
                 "--out", str(out)]) == 0
    data = np.load(out, allow_pickle=False)
    ids, logits, kv_bytes = data["ids"], data["logits"], data["kv_bytes"]
    t = len(ids)
    assert ids.dtype == np.int64 and logits.dtype == np.float32 and kv_bytes.dtype == np.int64
    assert logits.shape[0] == t and kv_bytes.shape == (t,)
    # greedy: each generated id is the argmax of the logits one position earlier
    np.testing.assert_array_equal(ids[t - 5:], logits[t - 6: t - 1].argmax(-1))
    assert np.all(np.diff(kv_bytes) > 0)
    for layer in range(2):
        attn = data[f"attn_{layer}"]
        assert attn.dtype == np.float32 and attn.shape == (4, t, t)
        assert np.all(np.triu(attn, k=1) == 0.0)
        np.testing.assert_allclose(attn.sum(-1), 1.0, atol=1e-5)


def test_bench_prints_one_json_object(folder, capsys):
    assert main(["bench", "--model", str(folder), "--prompt-tokens", "8", "--steps", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"prefill_ms", "decode_ms_per_token", "trace_bytes"}
    assert result["trace_bytes"] > 0 and result["decode_ms_per_token"] > 0


@pytest.mark.parametrize("extra", [["--model", "/no/such/model"], ["--steps", "100"]])
def test_user_errors_exit_2_with_one_line(folder, tmp_path, capsys, extra):
    args = ["trace", "--model", str(folder), "--prompt", "To be, or not to be", "--out", str(tmp_path / "x.npz")]
    assert main(args + extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and "Traceback" not in err
