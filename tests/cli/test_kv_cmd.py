"""`python -m explorer kv`: the table and the JSON list, from a folder, a config.json or a GGUF file."""
import json
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from explorer import cli

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "resources" / "configs"


@pytest.fixture
def kv_main(monkeypatch):
    """cli.main with only the kv subcommand registered, so this test does not depend on the others."""
    monkeypatch.setattr(cli, "SUBCOMMANDS", {"kv": cli.SUBCOMMANDS["kv"]})
    return cli.main


def run_json(kv_main, capsys, *args):
    assert kv_main(["kv", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_for_llama3_70b_lists_every_variant_with_the_native_one_marked(kv_main, capsys):
    rows = run_json(kv_main, capsys, "--model", str(CONFIGS / "llama3-70b"), "--tokens", "8192",
                    "--dtype", "bfloat16")
    assert all(set(r) == {"variant", "kv_heads", "bytes_per_token", "bytes_total", "native"} for r in rows)
    by = {r["variant"]: r for r in rows}
    assert [r["variant"] for r in rows if r["native"]] == ["gqa-8"]
    assert by["gqa-8"] == {"variant": "gqa-8", "kv_heads": 8, "bytes_per_token": 327_680,
                           "bytes_total": 327_680 * 8192, "native": True}
    assert by["mha"]["kv_heads"] == 64 and by["mqa"]["kv_heads"] == 1
    assert all(r["kv_heads"] is None for r in rows if r["variant"].startswith("mla-"))


def test_json_for_deepseek_v2_at_int8_and_extra_ranks(kv_main, capsys):
    rows = run_json(kv_main, capsys, "--model", str(CONFIGS / "deepseek-v2" / "config.json"),
                    "--tokens", "1000", "--dtype", "int8", "--rank", "256", "1024")
    by = {r["variant"]: r for r in rows}
    assert {"mla-256", "mla-512", "mla-1024"} <= set(by)
    assert by["mla-512"]["native"] and by["mla-512"]["bytes_per_token"] == 576 * 60
    assert by["mla-256"]["bytes_total"] == (256 + 64) * 60 * 1000


def test_text_table_for_gemma3_27b(kv_main, capsys):
    assert kv_main(["kv", "--model", str(CONFIGS / "gemma3-27b"), "--tokens", "32768"]) == 0
    out = capsys.readouterr().out
    assert "* gqa-16" in out and "52 sliding W=1024" in out and "fragmentation" in out


def test_full_model_folder_reads_only_its_config(kv_main, capsys, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 32, "n_positions": 64}))
    (tmp_path / "model.safetensors").write_bytes(b"not read")
    rows = run_json(kv_main, capsys, "--model", str(tmp_path), "--tokens", "10")
    assert {r["variant"]: r["bytes_per_token"] for r in rows}["mha"] == 2 * 4 * 8 * 2 * 4


def write_gguf(path: Path, arch: str, meta: dict) -> None:
    writer = gguf.GGUFWriter(str(path), arch)
    for key, value in meta.items():
        writer.add_uint32(f"{arch}.{key}", value)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_metadata_gives_the_same_table_as_the_config(kv_main, capsys, tmp_path):
    path = tmp_path / "tiny.gguf"
    write_gguf(path, "llama", {"block_count": 3, "attention.head_count": 6, "attention.head_count_kv": 2,
                               "embedding_length": 48, "context_length": 128})
    rows = run_json(kv_main, capsys, "--model", str(path), "--tokens", "5")
    by = {r["variant"]: r for r in rows}
    assert [r["variant"] for r in rows if r["native"]] == ["gqa-2"]
    assert by["gqa-2"]["bytes_per_token"] == 2 * 2 * 8 * 3 * 4


def test_gguf_gemma3_is_five_local_to_one_global(kv_main, capsys, tmp_path):
    path = tmp_path / "gemma.gguf"
    write_gguf(path, "gemma3", {"block_count": 6, "attention.head_count": 4, "attention.head_count_kv": 1,
                                "embedding_length": 32, "context_length": 256, "attention.key_length": 16,
                                "attention.sliding_window": 8})
    rows = run_json(kv_main, capsys, "--model", str(path), "--tokens", "100")
    mqa = {r["variant"]: r for r in rows}["mqa"]
    assert mqa["native"] and mqa["bytes_total"] == (5 * 8 + 100) * 2 * 16 * 4


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "does not exist"),
    (lambda p: p, "has no config.json"),
    (lambda p: (p / "config.json").write_text("{oops") and p, "not valid JSON"),
    (lambda p: (p / "c.json").write_text('{"model_type": "t5"}') and p / "c.json", "t5"),
    (lambda p: (p / "x.gguf").write_bytes(b"GGUF broken") and p / "x.gguf", "GGUF file"),
    (lambda p: (p / "w.bin").write_bytes(b"x") and p / "w.bin", "pickle checkpoint"),
    (lambda p: (p / "w.txt").write_bytes(b"x") and p / "w.txt", "neither"),
])
def test_bad_input_is_one_line_and_exit_2(kv_main, capsys, tmp_path, make, message):
    path = make(tmp_path)
    assert kv_main(["kv", "--model", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_negative_tokens_exit_2(kv_main, capsys):
    assert kv_main(["kv", "--model", str(CONFIGS / "llama3-70b"), "--tokens", "-1"]) == 2
    assert "--tokens: -1 is not between 1" in capsys.readouterr().err


@pytest.mark.slow
def test_module_entry_point_prints_json():
    """The README command itself, in a fresh interpreter (every subcommand module must import)."""
    result = subprocess.run([sys.executable, "-m", "explorer", "kv", "--model", str(CONFIGS / "deepseek-v2"),
                             "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert [r["variant"] for r in json.loads(result.stdout) if r["native"]] == ["mla-512"]
