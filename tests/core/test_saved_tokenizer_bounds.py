"""The tokenizer saved beside a pulled GGUF's float32 copy is held to the caps of a tokenizer.json: a piece
of at most 1,024 bytes and at most 2^20 entries or merges. A tampered saved file is not built or used: the
load builds the tokenizer again from the GGUF (which has the same caps) and writes a good file back."""
from __future__ import annotations

import json
import os

import pytest
import tokenizers

from explorer.core.loaders import gguf as gguf_loader
from explorer.core.loaders import gguf_cache, open_checkpoint
from explorer.core.loaders.gguf_header import MAX_PIECE_BYTES
from explorer.core.loaders.hf import MAX_TOKENIZER_STRINGS
from tests.core.test_gguf_cache import write_gguf


@pytest.fixture
def pulled(tmp_path, monkeypatch):
    """A GGUF inside the model store, loaded once, so that its tokenizer has been saved."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    monkeypatch.delenv(gguf_cache.DISABLE_ENV, raising=False)
    path = write_gguf(tmp_path / "store" / "tiny" / "tiny.gguf", tmp_path)
    reference = open_checkpoint(path).tokenizer.tokenizer.to_str()
    saved = gguf_loader.tokenizer_cache_path(path)
    assert saved.is_file()
    return path, saved, reference


def _tamper(saved, change) -> None:
    """Edit the tokenizer inside the saved file, keeping its fingerprint (so that it still looks fresh)."""
    outer = json.loads(saved.read_text(encoding="utf-8"))
    spec = json.loads(outer["tokenizer"])
    change(spec["model"])
    outer["tokenizer"] = json.dumps(spec)
    saved.write_text(json.dumps(outer), encoding="utf-8")


def _long_piece(model: dict) -> None:
    piece = "x" * (MAX_PIECE_BYTES + 1)
    model["vocab"][piece] = len(model["vocab"])


def _many_entries(model: dict) -> None:
    model["vocab"].update({f"p{index}": index + 100_000 for index in range(MAX_TOKENIZER_STRINGS + 1)})


@pytest.mark.parametrize("change", [_long_piece, _many_entries], ids=["a piece past 1,024 bytes",
                                                                      "more than 2^20 entries"])
def test_a_tampered_saved_tokenizer_is_not_used_and_is_built_again(pulled, monkeypatch, change):
    path, saved, reference = pulled
    _tamper(saved, change)
    built_from = []
    real_from_str = tokenizers.Tokenizer.from_str

    def watched(text):
        built_from.append(len(text))
        return real_from_str(text)

    monkeypatch.setattr(tokenizers.Tokenizer, "from_str", staticmethod(watched))
    tokenizer = open_checkpoint(path).tokenizer
    assert tokenizer.tokenizer.to_str() == reference                    # the GGUF's own vocabulary again
    assert tokenizer.longest_piece()[1] <= MAX_PIECE_BYTES
    if change is _many_entries:                                         # counted on the bytes, never built
        assert max(built_from, default=0) < 2 * len(reference), "the tampered tokenizer was built"
    assert json.loads(saved.read_text(encoding="utf-8"))["tokenizer"] == reference     # written back whole


def test_an_untampered_saved_tokenizer_is_used(pulled, monkeypatch):
    path, saved, reference = pulled
    monkeypatch.setattr(gguf_loader, "tokenizer_from_gguf", lambda *a: pytest.fail("built although fresh"))
    assert open_checkpoint(path).tokenizer.tokenizer.to_str() == reference
    assert os.path.getsize(saved) > 0
