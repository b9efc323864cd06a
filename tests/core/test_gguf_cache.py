"""The float32 copy of a pulled GGUF file: used on the next load, equal to a fresh dequantization,
rebuilt when the GGUF changed or the copy is damaged, never written for files outside the model store."""
from __future__ import annotations

import os
from pathlib import Path

import gguf
import pytest
import torch
from tokenizers import Tokenizer

from explorer.core.loaders import gguf as gguf_loader
from explorer.core.loaders import gguf_cache, open_checkpoint
from tests.core.tiny_checkpoints import write_hf_folder, write_llama_gguf

Q = gguf.GGMLQuantizationType
QUANT = {"model.layers.0.mlp.gate_proj.weight": Q.Q8_0, "model.layers.0.self_attn.q_proj.weight": Q.Q4_0,
         "model.layers.1.mlp.up_proj.weight": Q.F16}


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    monkeypatch.delenv(gguf_cache.DISABLE_ENV, raising=False)
    return tmp_path / "store"


def write_gguf(path, tmp_path, seed: int = 0):
    folder = tmp_path / f"hf-{seed}"
    config, tensors = write_hf_folder(folder, seed=seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_llama_gguf(path, config, tensors, Tokenizer.from_file(str(folder / "tokenizer.json")), QUANT)
    return path


def fresh(path):
    """Dequantize without any cache."""
    os.environ[gguf_cache.DISABLE_ENV] = "0"
    try:
        return open_checkpoint(path).tensors
    finally:
        del os.environ[gguf_cache.DISABLE_ENV]


def no_dequantizing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("dequantized although the copy was fresh")

    monkeypatch.setattr(gguf_loader, "read_tensors", refuse)


def assert_same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype == torch.float32 and torch.equal(a[name], b[name]), name


def test_the_second_load_reads_the_copy_and_equals_a_fresh_dequantization(store, tmp_path, monkeypatch):
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    first = open_checkpoint(path).tensors
    copy = gguf_cache.cache_path(path)
    assert copy is not None and copy.is_file() and copy.parent == path.parent
    expected = fresh(path)
    no_dequantizing(monkeypatch)
    second = open_checkpoint(path)
    assert_same(second.tensors, expected)
    assert_same(first, expected)
    assert second.hf_config["num_hidden_layers"] == 2
    second.tensors["model.norm.weight"] += 1.0              # owned memory: the file on disk is unchanged
    assert_same(open_checkpoint(path).tensors, expected)


def test_the_copy_is_read_into_owned_memory_not_mapped(store, tmp_path):
    # Matrix multiplies on memory-mapped weights ran several times slower, so the copy is read, not mapped.
    maps = Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("needs /proc to see the process's file mappings")
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    open_checkpoint(path)
    tensors = open_checkpoint(path).tensors
    copy = str(gguf_cache.cache_path(path))
    mapped = [tuple(int(a, 16) for a in line.split()[0].split("-"))
              for line in maps.read_text().splitlines() if line.endswith(copy)]
    pointers = [t.untyped_storage().data_ptr() for t in tensors.values()]
    assert not [p for p in pointers for lo, hi in mapped if lo <= p < hi]


def test_weights_the_model_stacks_are_read_adjacent_and_built_as_one_matrix(store, tmp_path):
    from explorer.core.runtime import load_model

    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    open_checkpoint(path)                                   # writes the copy
    checkpoint = open_checkpoint(path)
    tensors = checkpoint.tensors
    q, k, v = (tensors[f"model.layers.1.self_attn.{p}_proj.weight"] for p in "qkv")
    assert q.untyped_storage().data_ptr() == k.untyped_storage().data_ptr() == v.untyped_storage().data_ptr()
    assert k.data_ptr() == q.data_ptr() + q.numel() * 4 and v.data_ptr() == k.data_ptr() + k.numel() * 4
    attn = load_model(checkpoint).model.layers[1].attn
    stacked = attn.stacked[0]                               # [W^Q; W^K; W^V], rewritten once by columns
    assert torch.equal(stacked, torch.cat((q, k, v)))
    held = {attn.wq.weight.untyped_storage().data_ptr(), attn.wk.weight.untyped_storage().data_ptr(),
            attn.wv.weight.untyped_storage().data_ptr()}
    assert held == {stacked.untyped_storage().data_ptr()}  # the three Linears are views of it, not copies
    assert_same(tensors, fresh(path))


def test_a_changed_gguf_makes_the_copy_stale_and_it_is_rebuilt(store, tmp_path):
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    old = open_checkpoint(path).tensors
    write_gguf(path, tmp_path, seed=7)                      # new weights in the same place
    os.utime(path, ns=(1, 1))                               # and an mtime the copy cannot match
    rebuilt = open_checkpoint(path).tensors
    expected = fresh(path)
    assert_same(rebuilt, expected)
    assert not torch.equal(rebuilt["model.embed_tokens.weight"], old["model.embed_tokens.weight"])
    header = gguf_cache.cache_path(path)
    from explorer.core.loaders.hf import read_safetensors_header

    assert read_safetensors_header(header)["__metadata__"] == gguf_cache.fingerprint(path)


def test_a_damaged_copy_is_written_again(store, tmp_path, monkeypatch):
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    open_checkpoint(path)
    copy = gguf_cache.cache_path(path)
    copy.write_bytes(copy.read_bytes()[:1000])
    assert_same(open_checkpoint(path).tensors, fresh(path))
    no_dequantizing(monkeypatch)
    open_checkpoint(path)                                   # and the rewritten copy is used


def test_files_outside_the_store_or_with_the_cache_off_are_not_copied(store, tmp_path, monkeypatch):
    outside = write_gguf(tmp_path / "downloads" / "tiny.gguf", tmp_path)
    open_checkpoint(outside)
    assert gguf_cache.cache_path(outside) is None
    assert not any(p.name.endswith(gguf_cache.SUFFIX) for p in tmp_path.rglob("*"))
    inside = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    monkeypatch.setenv(gguf_cache.DISABLE_ENV, "0")
    open_checkpoint(inside)
    assert not any(p.name.endswith(gguf_cache.SUFFIX) for p in tmp_path.rglob("*"))


def test_the_tokenizer_is_saved_beside_the_copy_and_equals_a_fresh_build(store, tmp_path, monkeypatch):
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    built = open_checkpoint(path).tokenizer
    saved = gguf_loader.tokenizer_cache_path(path)
    assert saved is not None and saved.is_file() and saved.parent == path.parent

    def refuse(*args, **kwargs):
        raise AssertionError("built the tokenizer although the saved one was fresh")

    monkeypatch.setattr(gguf_loader, "tokenizer_from_gguf", refuse)
    cached = open_checkpoint(path).tokenizer
    assert cached.tokenizer.to_str() == built.tokenizer.to_str()
    assert (cached.add_bos, cached.bos_id, cached.eos_id) == (built.add_bos, built.bos_id, built.eos_id)
    for text in ["The capital of France is Paris.", "naïve café 東京 😀<|endoftext|>", "  \n\t"]:
        a, b = cached.encode(text), built.encode(text)
        assert list(a.ids) == list(b.ids) and a.text == b.text and a.spans == b.spans


def test_a_changed_gguf_or_a_damaged_tokenizer_file_builds_it_again(store, tmp_path):
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    open_checkpoint(path)
    saved = gguf_loader.tokenizer_cache_path(path)
    saved.write_text('{"fingerprint": ', encoding="utf-8")             # damaged
    assert open_checkpoint(path).tokenizer.encode("Paris").ids.size > 0
    assert saved.read_text(encoding="utf-8").startswith('{"fingerprint": {')
    os.utime(path, ns=(1, 1))                                          # stale: rebuilt and rewritten
    before = saved.stat().st_mtime_ns
    open_checkpoint(path)
    assert gguf_loader._tokenizer_fingerprint(path)["source_mtime_ns"] == "1"
    assert '"source_mtime_ns": "1"' in saved.read_text(encoding="utf-8") and saved.stat().st_mtime_ns >= before


def test_no_tokenizer_is_saved_outside_the_store(store, tmp_path):
    path = write_gguf(tmp_path / "elsewhere" / "tiny.gguf", tmp_path)
    open_checkpoint(path)
    assert gguf_loader.tokenizer_cache_path(path) is None
    assert not list(path.parent.glob("*.tokenizer.json"))


def test_a_copy_read_ahead_without_torch_is_taken_by_the_load_and_equals_its_own_read(store, tmp_path, monkeypatch):
    import subprocess
    import sys

    from explorer.core.loaders import gguf_copy

    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    open_checkpoint(path)                                   # writes the copy
    expected = fresh(path)
    # The read ahead runs while torch is imported elsewhere: neither it nor its package may import torch.
    probe = ("import sys; from pathlib import Path; from explorer.core.loaders import gguf_copy; "
             f"assert gguf_copy.prefetch(Path({str(path)!r})); "
             f"assert gguf_copy.take(gguf_copy.cache_path(Path({str(path)!r}))); "
             "print('torch' in sys.modules)")
    env = {**os.environ, "TRANSFORMER_EXPLORER_HOME": str(store)}
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          check=True).stdout.strip() == "False"
    reads = []
    real_read = gguf_copy.read
    monkeypatch.setattr(gguf_copy, "read", lambda copy, *stopped: (reads.append(copy), real_read(copy, *stopped))[1])
    assert gguf_copy.prefetch(path)
    checkpoint = open_checkpoint(path)
    assert len(reads) == 1, "the load took the copy read ahead instead of reading it again"
    assert_same(checkpoint.tensors, expected)
    q, k = (checkpoint.tensors[f"model.layers.0.self_attn.{p}_proj.weight"] for p in "qk")
    assert k.data_ptr() == q.data_ptr() + q.numel() * 4, "still stacked rows of one buffer"
    assert gguf_copy.take(gguf_cache.cache_path(path)) is None, "taken once"
    assert all(tensor.data_ptr() % 64 == 0 for name, tensor in checkpoint.tensors.items()
               if not name.endswith(("k_proj.weight", "v_proj.weight", "up_proj.weight"))), \
        "every buffer starts on 64 bytes, as torch.empty's do"


def test_a_read_ahead_the_load_did_not_take_is_dropped_with_the_load(store, tmp_path, monkeypatch):
    from explorer.core.loaders import gguf_copy

    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    other = write_gguf(store / "other" / "other.gguf", tmp_path, seed=3)
    open_checkpoint(path)
    open_checkpoint(other)
    assert gguf_copy.prefetch(other)
    open_checkpoint(path)                                   # another file's load keeps it
    assert gguf_copy.take(gguf_cache.cache_path(other)) is not None
    assert gguf_copy.prefetch(path)
    monkeypatch.setattr(gguf_loader, "cached_or_read_tensors", lambda *a: (_ for _ in ()).throw(ValueError("x")))
    with pytest.raises(ValueError):
        open_checkpoint(path)                               # failed before reading its tensors
    assert gguf_copy.take(gguf_cache.cache_path(path)) is None


def test_a_fresh_saved_tokenizer_spares_decoding_the_vocabulary(store, tmp_path, monkeypatch):
    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    first = open_checkpoint(path)                           # builds the tokenizer from the vocabulary, saves it
    monkeypatch.setattr(gguf_loader, "_tokenizer_metadata", lambda p: (_ for _ in ()).throw(AssertionError("decoded")))
    second = open_checkpoint(path)
    assert list(second.tokenizer.encode("To be, or not").ids) == list(first.tokenizer.encode("To be, or not").ids)
    assert second.hf_config.keys() == first.hf_config.keys() and second.hf_config["num_hidden_layers"] == 2


def test_a_read_ahead_of_a_cancelled_load_is_let_go(store, tmp_path):
    import gc
    import weakref

    from explorer.app.thread import threads
    from explorer.app.thread.core_api import _real_prefetch
    from explorer.core.loaders import gguf_copy

    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    open_checkpoint(path)
    _real_prefetch(str(path))
    ahead = gguf_copy._ahead[1].result()
    buffer = weakref.ref(ahead.buffers[0].base if ahead.buffers[0].base is not None else ahead.buffers[0])
    del ahead
    _real_prefetch(None)                                    # what ModelWorker.cancel asks
    for thread in threads.live():
        if thread.name == "model-prefetch":
            thread.join(10)
    threads.release_finished()                  # what the read's thread ran let go, as gc_guard's tick does
    gc.collect()
    assert gguf_copy.take(gguf_cache.cache_path(path)) is None and buffer() is None


def test_a_copy_holding_a_nan_is_made_again_from_the_gguf(store, tmp_path):
    """The copy is the store's own file: a NaN in it (a damaged disk) refused the good model at every load, and the
    sentence blamed the .gguf (boundary27). The model loads from the .gguf, equal to a fresh dequantization, and the
    copy written again is finite."""
    from safetensors.torch import load_file

    from explorer.core.loaders.hf import read_safetensors_header

    path = write_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    open_checkpoint(path)
    copy = gguf_cache.cache_path(path)
    tensors = load_file(str(copy))
    tensors["model.norm.weight"][0] = float("nan")
    metadata = read_safetensors_header(copy)["__metadata__"]
    gguf_cache.write_safetensors(tensors, str(copy), metadata)     # the same fingerprint: fresh, but damaged
    assert torch.isnan(load_file(str(copy))["model.norm.weight"]).any()
    assert_same(open_checkpoint(path).tensors, fresh(path))
    assert all(torch.isfinite(t).all() for t in load_file(str(copy)).values())


def test_a_large_copy_is_said_as_a_pause_before_it_is_written(store, tmp_path, monkeypatch):
    """safetensors serializes the copy in one call holding Python's lock (Gemma 3's 1.1 GB: 0.7-1.9 s of a frozen
    window, unsaid: drive31), so a copy past load_progress.PAUSES_FROM_BYTES is said as a Pause first, and the
    window shows it before the write starts; a small one is said plainly."""
    from explorer.core.loaders import load_progress

    def said_before_the_write(path) -> list:
        said, written = [], []
        write = gguf_cache.write_safetensors
        monkeypatch.setattr(gguf_cache, "write_safetensors", lambda *args: written.append(len(said)) or write(*args))
        open_checkpoint(path, progress=lambda share, text: said.append(text))
        assert written, "no copy was written"
        return said[:written[0]]

    small = said_before_the_write(write_gguf(store / "small" / "small.gguf", tmp_path))
    assert small[-1].startswith("writing a") and not isinstance(small[-1], load_progress.Pause), small[-3:]
    monkeypatch.setattr(load_progress, "PAUSES_FROM_BYTES", 1)      # any copy is large now
    large = said_before_the_write(write_gguf(store / "large" / "large.gguf", tmp_path, seed=1))
    assert isinstance(large[-1], load_progress.Pause) and large[-1].startswith("writing a"), large[-3:]
    assert "the window waits" in large[-1]
