"""The model store: catalog table, resolve(), recent files, and discovery of the Hugging Face cache."""
from __future__ import annotations

import json
import re

import pytest
from tokenizers import Tokenizer

from explorer.core import store
from explorer.core.errors import ModelLoadError
from explorer.core.model_summary import attention_variant, summarize
from tests.core.tiny_checkpoints import write_hf_folder, write_llama_gguf


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setattr(store, "resources_dir", lambda: tmp_path / "resources")


def _snapshot(tmp_path, repo: str):
    return tmp_path / "hf" / "hub" / f"models--{repo.replace('/', '--')}" / "snapshots" / "0123abcd"


def _as_blobs(snapshot):
    """Move a snapshot's files into ../../blobs and leave symlinks, as huggingface_hub does."""
    blobs = snapshot.parent.parent / "blobs"
    blobs.mkdir(exist_ok=True)
    for index, file in enumerate(sorted(snapshot.iterdir())):
        blob = blobs / f"blob{index}"
        file.rename(blob)
        file.symlink_to(blob)


def build_fake_hf_cache(tmp_path) -> set[str]:
    """A hub cache with two loadable models and several that must be listed as unsupported."""
    good = _snapshot(tmp_path, "org/good")
    config, tensors = write_hf_folder(good)
    _as_blobs(good)
    gguf_dir = _snapshot(tmp_path, "org/tiny-gguf")
    gguf_dir.mkdir(parents=True)
    write_llama_gguf(gguf_dir / "tiny.gguf", config, tensors, Tokenizer.from_file(str(good / "tokenizer.json")))

    pickled = _snapshot(tmp_path, "org/pickled")
    write_hf_folder(pickled)
    (pickled / "model.safetensors").unlink()
    (pickled / "pytorch_model.bin").write_bytes(b"not even read")
    remote = _snapshot(tmp_path, "org/remote")
    write_hf_folder(remote)
    (remote / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "x.Y"}}))
    no_tokenizer = _snapshot(tmp_path, "org/no-tokenizer")
    write_hf_folder(no_tokenizer)
    (no_tokenizer / "tokenizer.json").unlink()
    mamba = _snapshot(tmp_path, "org/mamba")
    write_hf_folder(mamba)
    (mamba / "config.json").write_text(json.dumps({**config, "model_type": "mamba"}))
    _snapshot(tmp_path, "org/readme-only").mkdir(parents=True)
    (_snapshot(tmp_path, "org/readme-only") / "README.md").write_text("hi")
    dataset = tmp_path / "hf" / "hub" / "datasets--org--data" / "snapshots" / "1"
    write_hf_folder(dataset)
    return {"org/good", "org/tiny-gguf/tiny.gguf"}


def test_discovery_finds_exactly_the_loadable_models(tmp_path):
    loadable = build_fake_hf_cache(tmp_path)
    entries = [e for e in store.catalog() if e.source == "hf-cache"]
    assert {e.name for e in entries if e.available} == loadable
    unsupported = {e.name: e.reason for e in entries if not e.available}
    assert set(unsupported) == {"org/pickled", "org/remote", "org/no-tokenizer", "org/mamba"}
    assert "never unpickled" in unsupported["org/pickled"]
    assert "custom code" in unsupported["org/remote"]
    assert "tokenizer.json" in unsupported["org/no-tokenizer"]
    assert "mamba" in unsupported["org/mamba"]


def test_summary_counts_parameters_from_headers(tmp_path):
    build_fake_hf_cache(tmp_path)
    by_name = {e.name: e for e in store.catalog()}
    good, tiny = by_name["org/good"].summary, by_name["org/tiny-gguf/tiny.gguf"].summary
    expected = sum(t.numel() for t in write_hf_folder(tmp_path / "again")[1].values())
    assert good.params == tiny.params == expected
    assert (good.family, good.attention, good.layers, good.heads, good.kv_heads) == ("llama", "gqa", 2, 4, 2)
    assert (tiny.family, tiny.attention, tiny.format) == ("llama", "gqa", "gguf")
    assert good.size_bytes > expected * 4  # followed the symlinks to the blobs


def test_attention_variants():
    assert attention_variant({"num_attention_heads": 8}) == "mha"
    assert attention_variant({"num_attention_heads": 8, "num_key_value_heads": 8}) == "mha"
    assert attention_variant({"num_attention_heads": 8, "num_key_value_heads": 1}) == "mqa"
    assert attention_variant({"num_attention_heads": 9, "num_key_value_heads": 3}) == "gqa"
    assert attention_variant({"num_attention_heads": 8, "num_key_value_heads": 8, "kv_lora_rank": 64}) == "mla"
    assert attention_variant({"n_head": 12}) == "mha"


def test_resolve(tmp_path):
    build_fake_hf_cache(tmp_path)
    assert store.resolve("org/good") == _snapshot(tmp_path, "org/good")
    write_hf_folder(tmp_path / "mine")
    assert store.resolve(str(tmp_path / "mine")) == tmp_path / "mine"
    with pytest.raises(ModelLoadError, match="smollm2-135m is not pulled yet; run: python -m explorer pull"):
        store.resolve("smollm2-135m")
    with pytest.raises(ModelLoadError, match="known model name"):
        store.resolve("no-such-model")


def test_pulled_and_bundled_models_are_listed_and_resolved(tmp_path):
    folder = store.home() / "smollm2-135m"
    folder.mkdir(parents=True)
    (folder / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    assert store.pulled_path("smollm2-135m") is None  # no pulled.json: an interrupted pull
    (folder / store.PULLED_FILE).write_text("{}")
    assert store.resolve("smollm2-135m") == folder / "SmolLM2-135M-Instruct.Q4_1.gguf"
    write_hf_folder(tmp_path / "resources" / "models" / "shakespeare-gqa")
    entries = {e.name: e for e in store.catalog()}
    assert entries["shakespeare-gqa"].source == "bundled" and entries["shakespeare-gqa"].available
    assert store.resolve("shakespeare-gqa") == tmp_path / "resources" / "models" / "shakespeare-gqa"
    assert entries["smollm2-135m"].source == "pulled"
    assert not entries["smollm2-135m"].available  # a 4-byte file is not a GGUF model
    assert entries["gemma3-270m"].source == "pullable" and "pull gemma3-270m" in entries["gemma3-270m"].reason


def test_recent_list(tmp_path):
    write_hf_folder(tmp_path / "a")
    write_hf_folder(tmp_path / "b")
    for path in ("a", "b", "a"):
        store.remember_recent(tmp_path / path)
    assert store.recent_paths() == [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]
    for index in range(store.RECENT_LIMIT + 5):
        store.remember_recent(tmp_path / f"gone{index}")
    assert len(store.recent_paths()) == store.RECENT_LIMIT
    store.remember_recent(tmp_path / "b")
    recent = [e for e in store.catalog() if e.source == "recent"]
    assert [e.path for e in recent] == [(tmp_path / "b").resolve()]  # missing paths are skipped
    assert recent[0].available


def test_the_recent_list_survives_a_full_disk_and_has_the_umask_mode(tmp_path, monkeypatch):
    import errno
    import os

    old = os.umask(0o022)
    try:
        store.remember_recent(tmp_path / "a")
    finally:
        os.umask(old)
    recent = store.home() / store.RECENT_FILE
    assert recent.stat().st_mode & 0o777 == 0o644
    before = recent.read_bytes()

    def full(source, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    store.remember_recent(tmp_path / "b")                       # only the recent list is lost, quietly
    assert recent.read_bytes() == before and sorted(os.listdir(store.home())) == [store.RECENT_FILE]


def test_catalog_sizes_are_the_sizes_of_the_pulled_files():
    """Checked against the store `make test` pulls into (the files whose sha256 matched the catalog)."""
    import os
    from pathlib import Path

    pulled = Path(os.environ.get("TRANSFORMER_EXPLORER_TEST_MODELS", ".cache/test-models"))
    checked = 0
    for entry in store.PULLABLE.values():
        for file in entry.files:
            path = pulled / entry.name / file.name
            if path.is_file():
                assert path.stat().st_size == file.size, file.name
                checked += 1
        gguf = pulled / entry.name / entry.open_as
        if entry.open_as.endswith(".gguf") and gguf.is_file():      # the float32 copy: 4 bytes a parameter
            assert entry.first_load_bytes == 4 * summarize(gguf)[0].params, entry.name
    if not checked:
        pytest.skip("no pulled test models to compare the catalog's sizes with")


def test_catalog_sha256_values_are_well_formed():
    assert set(store.PULLABLE) == {"smollm2-135m", "gemma3-270m", "minilm-l6"}
    for entry in store.PULLABLE.values():
        assert all(re.fullmatch(r"[0-9a-f]{64}", f.sha256) for f in entry.files)
        assert all("==" in r for r in entry.requirements)
    assert store.PULLABLE["gemma3-270m"].terms and not store.PULLABLE["smollm2-135m"].terms
    assert len(store.PULLABLE["gemma3-270m"].files[0].members) == 4


def test_summary_of_a_non_model(tmp_path):
    (tmp_path / "x.txt").write_text("x")
    summary, reason = summarize(tmp_path / "x.txt")
    assert summary is None
    assert reason == f"{tmp_path / 'x.txt'} is neither a model folder, a config.json nor a .gguf file."
    (tmp_path / "folder").mkdir()
    summary, reason = summarize(tmp_path / "folder")
    assert summary is None and str(tmp_path / "folder") in reason
