"""A load's progress moves with the work and is never full while work remains (issue 22 #8, drive20 m2): Gemma 3's
first open sat at "dequantizing token_embd.weight 0%" for ~13 s (the bar counted tensors, and the embedding is one of
236 holding 62 % of the values), then at a full bar for ~10 s while the float32 copy was written and the model made."""
from __future__ import annotations

import gguf
import numpy as np
import pytest
import safetensors
from tokenizers import Tokenizer

from explorer.core import runtime
from explorer.core.loaders import gguf as gguf_loader
from explorer.core.loaders import gguf_cache
from explorer.core.loaders.gguf_header import read_gguf_header
from tests.core.test_gguf_cache import fresh, store  # noqa: F401 (fixture)
from tests.core.tiny_checkpoints import write_hf_folder, write_llama_gguf

Q = gguf.GGMLQuantizationType


class Stop(Exception):
    pass


def big_embedding_gguf(path, tmp_path):
    """A tiny llama GGUF whose token embedding (Q8_0) holds most of its values, as Gemma 3's does."""
    folder = tmp_path / "hf"
    config, tensors = write_hf_folder(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_llama_gguf(path, config, tensors, Tokenizer.from_file(str(folder / "tokenizer.json")),
                     {"model.embed_tokens.weight": Q.Q8_0})
    return path


def values(header) -> list[int]:
    return [int(np.prod(info.shape)) for info in header.tensors]


def test_dequantizing_reports_the_share_of_values_done(tmp_path, monkeypatch):
    """Within the embedding the bar moves in steps, and once it is done the bar stands at the embedding's share
    of the file's values (counted here from the header's shapes)."""
    path = big_embedding_gguf(tmp_path / "q.gguf", tmp_path)
    header = read_gguf_header(path)
    index = next(i for i, t in enumerate(header.tensors) if t.name == "token_embd.weight")
    sizes = values(header)
    monkeypatch.setattr(gguf_loader, "CHUNK_VALUES", 4 * int(header.tensors[index].shape[-1]))
    calls = []
    gguf_loader.read_tensors(path, header, runtime.open_checkpoint(path).hf_config,
                             lambda share, text: calls.append((share, text)))
    shares = [share for share, _ in calls]
    assert shares == sorted(shares) and all(0 <= share < 1 for share in shares[:-1])
    assert shares[-1] == pytest.approx(1.0)
    embedding = [share for share, text in calls if "token_embd" in text]
    assert len(set(embedding)) > 3, "the embedding's bar did not move"
    assert embedding[-1] == pytest.approx(sum(sizes[:index + 1]) / sum(sizes))


def test_a_first_load_into_the_store_moves_while_writing_the_copy_and_is_never_full(store, tmp_path,  # noqa: F811
                                                                                     monkeypatch):
    path = big_embedding_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    monkeypatch.setattr(gguf_cache, "WRITE_BYTES", 4096, raising=False)
    calls = []
    loaded = runtime.load_model(path, progress=lambda share, text: calls.append((share, text)))
    shares = [share for share, _ in calls]
    assert shares == sorted(shares), "the bar went back"
    assert max(shares) < 1, "a full bar while the model was still being made"
    writing = [share for share, text in calls if "copy" in text]
    assert len(set(writing)) > 3, "the bar stood still while the float32 copy was written"
    assert calls[-1][1] == "making the model ready"
    # the copy written piece by piece is a safetensors file the library itself reads back, equal to the weights
    copy = gguf_cache.cache_path(path)
    expected = fresh(path)
    with safetensors.safe_open(str(copy), framework="pt") as handle:
        assert sorted(handle.keys()) == sorted(expected)
        for name in expected:
            assert handle.get_tensor(name).equal(expected[name]), name
    assert loaded.model is not None


def test_a_cancel_while_the_copy_is_written_leaves_no_copy(store, tmp_path, monkeypatch):  # noqa: F811
    path = big_embedding_gguf(store / "tiny" / "tiny.gguf", tmp_path)
    monkeypatch.setattr(gguf_cache, "WRITE_BYTES", 4096, raising=False)

    def progress(share, text):
        if "copy" in text and share > 0.7:
            raise Stop()

    with pytest.raises(Stop):
        runtime.load_model(path, progress=progress)
    folder = path.parent
    assert sorted(p.name for p in folder.iterdir() if "f32" in p.name) == [], "a partial copy was left"
