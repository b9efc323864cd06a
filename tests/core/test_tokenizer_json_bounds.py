"""A tokenizer.json is bounded as a GGUF vocabulary is: no piece (vocabulary entry, added token, either side
of a merge) longer than the GGUF reader's cap, no more vocabulary entries or merges than its arrays may
hold. Each is one sentence naming the file and the problem; a piece at the cap still loads."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.core.errors import ModelLoadError
from explorer.core.loaders import open_checkpoint
from explorer.core.loaders.gguf_header import DECODED_ARRAYS, MAX_PIECE_BYTES
from tests.core import fuzz_files as ff
from tests.core.test_fuzz_model_files import mutate_gguf, run_model
from tests.core.tiny_checkpoints import write_hf_folder, write_llama_gguf


@pytest.fixture
def folder(tmp_path) -> Path:
    write_hf_folder(tmp_path / "model")
    return tmp_path / "model"


def _spec(folder: Path) -> dict:
    return json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))


def _write(folder: Path, spec: dict) -> None:
    (folder / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")


def _with_piece(spec: dict, piece: str) -> dict:
    """`piece` added to the vocabulary, with a merge that builds it from two pieces of its own halves."""
    vocab = spec["model"]["vocab"]
    half = len(piece) // 2
    for entry in (piece[:half], piece[half:], piece):
        vocab.setdefault(entry, len(vocab))
    merges = spec["model"]["merges"]
    merges.append([piece[:half], piece[half:]] if isinstance(merges[0], list) else f"{piece[:half]} {piece[half:]}")
    return spec


def _refusal(folder: Path) -> str:
    with pytest.raises(ModelLoadError) as caught:
        open_checkpoint(folder)
    message = str(caught.value)
    assert "\n" not in message and str(folder / "tokenizer.json") in message, message
    return message


@pytest.mark.parametrize("piece", ["x" * (MAX_PIECE_BYTES + 1), "東" * (MAX_PIECE_BYTES // 3 + 1), "y" * 200_000],
                         ids=["one byte past the cap", "past it in bytes, not characters", "200,000 characters"])
def test_a_vocabulary_piece_longer_than_any_token_is_refused(folder, piece):
    _write(folder, _with_piece(_spec(folder), piece))
    message = _refusal(folder)
    length = len(piece.encode("utf-8"))
    assert f"a vocabulary piece of {length:,} bytes, longer than the {MAX_PIECE_BYTES:,} of any token" in message


def test_a_long_added_token_is_refused_as_a_piece(folder):
    spec = _spec(folder)
    content = "<|" + "z" * MAX_PIECE_BYTES + "|>"
    spec["added_tokens"].append({"id": len(spec["model"]["vocab"]) + 10, "content": content, "single_word": False,
                                 "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    _write(folder, spec)
    assert f"a vocabulary piece of {len(content):,} bytes" in _refusal(folder)


def test_a_piece_at_the_cap_loads_and_runs(folder):
    _write(folder, _with_piece(_spec(folder), "w" * MAX_PIECE_BYTES))
    assert open_checkpoint(folder).tokenizer.longest_piece() == (MAX_PIECE_BYTES, MAX_PIECE_BYTES)
    assert run_model(folder) == "ran"


def test_the_same_piece_in_a_gguf_vocabulary_is_refused_too(folder, tmp_path):
    """One cap for both files a vocabulary comes in."""
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    config = json.loads((folder / "config.json").read_text())
    write_llama_gguf(tmp_path / "good.gguf", config, load_file(str(folder / "model.safetensors")),
                     Tokenizer.from_file(str(folder / "tokenizer.json")))
    parts = ff.read_gguf(tmp_path / "good.gguf")
    tokens = next(value for key, value in parts.fields if key == "tokenizer.ggml.tokens").value
    long = "x" * (MAX_PIECE_BYTES + 1)
    mutate_gguf(parts, "value", 0, ("tokenizer.ggml.tokens", ff.Value(ff.ARRAY, tokens[:-1] + [long], ff.STRING)))
    ff.write_gguf(tmp_path / "long.gguf", parts)
    with pytest.raises(ModelLoadError, match=f"longer than the {MAX_PIECE_BYTES} of any token"):
        open_checkpoint(tmp_path / "long.gguf")


def test_a_vocabulary_of_more_entries_than_any_model_is_refused_from_its_bytes(folder):
    limit = DECODED_ARRAYS["tokenizer.ggml.tokens"]
    spec = _spec(folder)
    spec["model"]["vocab"].update({f"p{index}": index + 1000 for index in range(limit + 10)})
    _write(folder, spec)
    started = time.perf_counter()
    message = _refusal(folder)
    assert f"more than the {limit:,} of any tokenizer" in message and "vocabulary entries" in message
    assert time.perf_counter() - started < 2.0, "counted on the bytes, not built"


PIECES = st.builds(lambda unit, count: unit * count,
                   st.sampled_from(["a", "é", "東", "😀", "Ġ", "\\", '"', "\u0000"]),
                   st.integers(1, 1200))


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(piece=PIECES, as_added=st.booleans())
def test_any_piece_either_loads_within_the_cap_or_is_refused_naming_its_length(folder, piece, as_added):
    from explorer.core.loaders.hf import read_tokenizer

    original = folder.parent / "tokenizer.original.json"        # the folder is shared by every example
    if not original.exists():
        original.write_bytes((folder / "tokenizer.json").read_bytes())
    spec = json.loads(original.read_text(encoding="utf-8"))
    if as_added:
        spec["added_tokens"].append({"id": 10_000, "content": piece, "single_word": False, "lstrip": False,
                                     "rstrip": False, "normalized": False, "special": False})
    else:
        spec = _with_piece(spec, piece)
    _write(folder, spec)
    length = len(piece.encode("utf-8"))
    try:
        tokenizer = read_tokenizer(folder, {})
    except ModelLoadError as error:
        assert length > MAX_PIECE_BYTES and f"a vocabulary piece of {length:,} bytes" in str(error), str(error)
        return
    assert length <= MAX_PIECE_BYTES and tokenizer.longest_piece()[1] <= MAX_PIECE_BYTES
