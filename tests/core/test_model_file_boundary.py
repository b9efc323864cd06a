"""Regression cases of the model-file boundary: what the fuzz suite (test_fuzz_model_files.py) found in the
code before the boundary was built, and the classes of hostile files it cannot reach (FIFOs, permissions,
non-UTF-8 folders, bombs). Each is refused with one sentence naming the file and the field or value.
"""
from __future__ import annotations

import json
import math
import os
import resource
import struct
import time
from pathlib import Path

import pytest

from explorer.core.errors import (
    ContextOverflowError,
    ExplorerError,
    InvalidConfigError,
    ModelLoadError,
    NonFiniteError,
    TokenizerError,
    UnsupportedModelError,
)
from explorer.core.loaders import open_checkpoint
from tests.core import fuzz_files as ff
from tests.core.test_fuzz_model_files import mutate_gguf, mutate_safetensors, mutate_tokenizer, run_model
from tests.core.tiny_checkpoints import write_hf_folder, write_llama_gguf


@pytest.fixture
def folder(tmp_path) -> Path:
    write_hf_folder(tmp_path / "model")
    return tmp_path / "model"


@pytest.fixture
def gguf_parts(folder, tmp_path) -> ff.GGUFParts:
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    config = json.loads((folder / "config.json").read_text())
    write_llama_gguf(tmp_path / "good.gguf", config, load_file(str(folder / "model.safetensors")),
                     Tokenizer.from_file(str(folder / "tokenizer.json")))
    return ff.read_gguf(tmp_path / "good.gguf")


def refused(path: Path, error=ModelLoadError) -> str:
    """The one sentence loading and running `path` ends in."""
    from explorer.core.decode import Decoder
    from explorer.core.runtime import load_model

    with pytest.raises(error) as caught:
        loaded = load_model(path)
        Decoder(loaded).prefill(loaded.tokenizer.encode("The capital of France is"))
    message = str(caught.value)
    assert "\n" not in message and message, message
    return message


# ----- safetensors headers (found by the fuzz suite: tracebacks and silent NaN) --------------------
@pytest.mark.parametrize("kind, value, says", [
    ("data_offsets", None, "data_offsets None, not two non-negative integers"),
    ("data_offsets", [], "data_offsets [], not two"),
    ("data_offsets", ["0", "4"], "data_offsets ['0', '4']"),
    ("data_offsets", [0, 4, 8], "data_offsets [0, 4, 8]"),
    ("shape", "F32", "the shape 'F32', not a list"),
    ("shape", [[1]], "the shape [[1]]"),
    ("shape", None, "the shape None"),
    ("dtype", [], "unknown dtype []"),
    ("shift", 1, "leaves a gap of 1 bytes"),
    ("shift", -1, "data_offsets [-1,"),
    ("overlap", 4, "overlaps tensor"),
    ("metadata", [1], "__metadata__ is not an object of strings"),
])
def test_a_safetensors_header_of_the_wrong_type_or_layout_is_refused(folder, kind, value, says):
    mutate_safetensors(folder / "model.safetensors", kind, 0, value)
    message = refused(folder)
    assert says in message and "model.safetensors" in message


def test_a_tensor_moved_one_byte_back_over_its_neighbour_is_refused(folder):
    header, data = ff.read_safetensors(folder / "model.safetensors")
    name = next(n for n, e in header.items() if n != "__metadata__" and e["data_offsets"][0] > 0)
    index = sorted(n for n in header if n != "__metadata__").index(name)
    mutate_safetensors(folder / "model.safetensors", "shift", index, -1)
    assert "overlaps tensor" in refused(folder)


def test_a_gap_between_tensors_is_refused(folder):
    header, data = ff.read_safetensors(folder / "model.safetensors")
    for entry in header.values():
        if isinstance(entry, dict) and "data_offsets" in entry and entry["data_offsets"][0] > 0:
            entry["data_offsets"] = [o + 4 for o in entry["data_offsets"]]
    ff.write_safetensors(folder / "model.safetensors", header, data + bytes(4))
    assert "leaves a gap of 4 bytes" in refused(folder)


def test_a_symlink_to_a_text_file_is_named_as_text_not_read_as_a_length(folder):
    (folder / "notes.txt").write_text("version https://git-lfs.github.com/spec/v1\n")
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(folder / "notes.txt")
    assert "is not a safetensors file: it begins with the text 'version '" in refused(folder)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_weight_is_named_at_load(folder, value):
    mutate_safetensors(folder / "model.safetensors", "nonfinite", 0, value)
    message = refused(folder, NonFiniteError)
    assert "weight lm_head.weight holds" in message and str(folder) in message


def test_a_weight_whose_shape_disagrees_is_named_as_the_file_names_it(folder):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": config["vocab_size"] - 1}))
    message = refused(folder)
    assert f"weight model.embed_tokens.weight has shape ({config['vocab_size']}, " in message


# ----- config.json values (found by the fuzz suite, and the list) --------------------------
@pytest.mark.parametrize("changes, says", [
    ({"partial_rotary_factor": 2}, "partial_rotary_factor = 2 is not legal: it must be a finite number > 0 and <= 1"),
    ({"partial_rotary_factor": -1}, "partial_rotary_factor = -1 is not legal"),
    ({"partial_rotary_factor": 0.5}, "partial_rotary_factor 0.5 rotates only part of each head"),
    ({"rms_norm_eps": -1}, "rms_norm_eps = -1 is not legal: it must be a finite number > 0"),
    ({"rms_norm_eps": math.nan}, "rms_norm_eps = nan is not legal"),
    ({"rope_theta": 0}, "rope_theta = 0 is not legal"),
    ({"hidden_act": "swishy"}, "hidden_act = 'swishy' is not legal: it must be one of gelu"),
    ({"num_key_value_heads": 3}, "the 3 key/value heads must divide the 4 query heads"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 32}}, "rope_scaling.low_freq_factor = 0 is not legal"),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                       "original_max_position_embeddings": 32}}, "must be below high_freq_factor"),
    ({"model_type": "mistral", "sliding_window": -5}, "sliding_window = -5 is not legal"),
    ({"vocab_size": 0}, "vocab_size = 0 is not legal: it must be at least 1 for a model to run."),
    ({"intermediate_size": 0}, "intermediate_size = 0 is not legal: it must be at least 1 for a model with a dense"),
])
def test_a_degenerate_config_value_is_refused_naming_the_config_file_and_field(folder, changes, says):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    message = refused(folder, InvalidConfigError)
    assert says in message and str(folder / "config.json") in message


@pytest.mark.parametrize("config, says", [
    ({"model_type": "gemma3_text", "query_pre_attn_scalar": 0}, "query_pre_attn_scalar = 0 is not legal"),
    ({"model_type": "deepseek_v3", "n_group": 2, "topk_group": 3}, "topk_group 3 must be at most n_group 2"),
])
def test_family_specific_fields_are_checked_by_the_schema(config, says):
    from explorer.core.config_schema import check_config

    with pytest.raises(InvalidConfigError, match=says):
        check_config(config)


def test_the_schema_knows_exactly_the_engines_activations():
    from explorer.core.config_schema import ACTIVATION_NAMES
    from explorer.core.model import ACTIVATIONS

    assert set(ACTIVATIONS) == ACTIVATION_NAMES


# ----- GGUF metadata and tensor records (found by the fuzz suite) ----------------------------------
@pytest.mark.parametrize("key, value, says", [
    ("tokenizer.ggml.merges", ff.Value(ff.ARRAY, [1, 2, 3], ff.I32), "tokenizer.ggml.merges = list is not legal"),
    ("tokenizer.ggml.merges", ff.Value(ff.U32, 0), "tokenizer.ggml.merges = 0 is not legal"),
    ("tokenizer.ggml.merges", ff.Value(ff.ARRAY, ["ab"], ff.STRING), "two pieces joined by a space"),
    ("tokenizer.ggml.tokens", ff.Value(ff.ARRAY, [1, 2, 3], ff.I32), "tokenizer.ggml.tokens is not a list of strings"),
    ("tokenizer.ggml.tokens", ff.Value(ff.STRING, "x"), "tokenizer.ggml.tokens is not a list of strings"),
    ("tokenizer.ggml.bos_token_id", ff.Value(ff.STRING, "1"), "tokenizer.ggml.bos_token_id = '1' is not a token id"),
    ("llama.attention.head_count_kv", ff.Value(ff.STRING, "x"), "llama.attention.head_count_kv = 'x' is not legal"),
    ("llama.attention.head_count", ff.Value(ff.U32, 3),
     "llama.attention.head_count: the 2 key/value heads must divide"),
    ("llama.attention.head_count", ff.Value(ff.U32, 0), "llama.attention.head_count = 0 is not legal"),
    ("llama.embedding_length", ff.Value(ff.STRING, "x"), "llama.embedding_length = 'x' is not legal"),
    ("llama.rope.freq_base", ff.Value(ff.F32, 0.0), "llama.rope.freq_base = 0.0 is not legal"),
    ("llama.attention.layer_norm_rms_epsilon", ff.Value(ff.F32, math.nan), "layer_norm_rms_epsilon = nan"),
    ("general.alignment", ff.Value(ff.ARRAY, [1, 2, 3], ff.I32), "general.alignment = {'array_length': 3}"),
    ("general.alignment", ff.Value(ff.STRING, "x"), "general.alignment = 'x' is not a power of two"),
    ("general.alignment", ff.Value(ff.F32, math.nan), "general.alignment = nan is not a power of two"),
    ("general.alignment", ff.Value(ff.U32, 3), "general.alignment = 3 is not a power of two"),
    ("tokenizer.ggml.pre", ff.nested_array(3), "is an array of arrays"),
    # found by a 1,000-example run: a per-layer table of 2^40 entries was built before the bounds were checked
    ("llama.block_count", ff.Value(ff.U64, 1 << 40), "llama.block_count = 1099511627776 is not legal"),
])
def test_gguf_metadata_of_the_wrong_type_is_refused_naming_the_key(gguf_parts, tmp_path, key, value, says):
    mutate_gguf(gguf_parts, "value", 0, (key, value))
    ff.write_gguf(tmp_path / "bad.gguf", gguf_parts)
    message = refused(tmp_path / "bad.gguf")
    assert says in message and "bad.gguf" in message


@pytest.mark.parametrize("kind, value, says", [
    ("duplicate_key", "llama.block_count", "the metadata key llama.block_count appears twice"),
    ("duplicate_tensor", None, "appears twice"),
    ("tensor_type", 2, "not whole blocks of 32"),            # Q4_0 rows of 32 values need 18-byte blocks
    ("tensor_offset", 4, "not at"),
])
def test_gguf_layout_faults_are_refused(gguf_parts, tmp_path, kind, value, says):
    mutate_gguf(gguf_parts, kind, 3, value)
    ff.write_gguf(tmp_path / "bad.gguf", gguf_parts)
    assert says in refused(tmp_path / "bad.gguf")


def test_arrays_nested_200000_deep_are_refused_at_the_first_level(gguf_parts, tmp_path):
    ff.write_gguf(tmp_path / "deep.gguf", gguf_parts)
    raw = (tmp_path / "deep.gguf").read_bytes()
    key = b"general.nested"
    nested = b"".join(struct.pack("<IQ", ff.ARRAY, 1) for _ in range(200_000)) + struct.pack("<IQ", ff.U8, 0)
    field = struct.pack("<Q", len(key)) + key + struct.pack("<I", ff.ARRAY) + nested
    count = struct.unpack_from("<Q", raw, 16)[0]
    (tmp_path / "deep.gguf").write_bytes(raw[:16] + struct.pack("<Q", count + 1) + raw[24:24] + field + raw[24:])
    assert "general.nested is an array of arrays" in refused(tmp_path / "deep.gguf")


def test_an_unrelated_large_numeric_array_is_never_decoded(gguf_parts, tmp_path):
    from explorer.core.loaders.gguf_header import read_gguf_header

    gguf_parts.fields.append(("general.unrelated", ff.Value(ff.ARRAY, [0] * (4 << 20), ff.U32)))
    ff.write_gguf(tmp_path / "big.gguf", gguf_parts)                              # 16 MB of numbers
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    header = read_gguf_header(tmp_path / "big.gguf", keep_arrays=True)
    assert header.metadata["general.unrelated"] == {"array_length": 4 << 20}
    assert run_model(tmp_path / "big.gguf") == "ran"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before < 100     # a list would be ~150 MB


def test_a_merges_list_longer_than_any_model_is_refused_from_its_count(gguf_parts, tmp_path):
    from explorer.core.loaders.gguf_header import DECODED_ARRAYS

    limit = DECODED_ARRAYS["tokenizer.ggml.merges"]
    mutate_gguf(gguf_parts, "value", 0, ("tokenizer.ggml.merges", ff.Value(ff.ARRAY, ["a b"] * (limit + 1), ff.STRING)))
    ff.write_gguf(tmp_path / "merges.gguf", gguf_parts)
    assert f"tokenizer.ggml.merges holds {limit + 1:,} values" in refused(tmp_path / "merges.gguf")


def test_a_gguf_that_rotates_part_of_each_head_is_refused_naming_the_key(gguf_parts, tmp_path):
    """llama.cpp rotates only the first rope.dimension_count numbers of each head; it was ignored (boundary27)."""
    head = dict(gguf_parts.fields)["llama.embedding_length"].value // dict(gguf_parts.fields)[
        "llama.attention.head_count"].value
    mutate_gguf(gguf_parts, "value", 0, ("llama.rope.dimension_count", ff.Value(ff.U32, head // 2)))
    ff.write_gguf(tmp_path / "partial.gguf", gguf_parts)
    message = refused(tmp_path / "partial.gguf", UnsupportedModelError)
    assert "partial.gguf: llama.rope.dimension_count: partial_rotary_factor 0.5 rotates only part of each head" \
        in message


def test_a_non_finite_gguf_weight_is_named(gguf_parts, tmp_path):
    mutate_gguf(gguf_parts, "nonfinite", 0, math.nan)
    ff.write_gguf(tmp_path / "nan.gguf", gguf_parts)
    assert "holds nan" in refused(tmp_path / "nan.gguf", NonFiniteError)


def test_the_sentencepiece_merge_builder_is_not_quadratic_in_a_pieces_length():
    from explorer.core.loaders.gguf_tokenizer import sentencepiece_merges

    pieces = ["a", "b"] + ["ab" * 50_000]                     # one piece of 100,000 characters
    started = time.perf_counter()
    assert sentencepiece_merges(pieces, [0.0] * 3, [1] * 3) == []
    assert time.perf_counter() - started < 0.5


# ----- tokenization --------------------------------------------------------------------------------
def test_a_catastrophic_split_pattern_is_given_up_on_within_seconds(folder, capfd):
    mutate_tokenizer(folder / "tokenizer.json", "split", 0, "(\\w+\\s?)*$")
    from explorer.core.runtime import load_model

    loaded = load_model(folder)
    started = time.perf_counter()
    with pytest.raises(TokenizerError) as caught:
        loaded.tokenizer.encode("word " * 300 + "!")
    assert time.perf_counter() - started < 5.0
    assert str(folder) in str(caught.value) and "\n" not in str(caught.value)
    assert "panicked" not in capfd.readouterr().err


def test_a_prompt_far_longer_than_the_context_is_refused_before_it_is_tokenized(folder):
    from explorer.core.runtime import load_model

    loaded = load_model(folder)
    started = time.perf_counter()
    with pytest.raises(ContextOverflowError, match="10,000,000 characters.*context of 64 tokens"):
        loaded.tokenizer.encode("a" * 10_000_000)
    assert time.perf_counter() - started < 0.5
    assert len(loaded.tokenizer.encode("a " * 50_000)) > 64      # a pasted book is still shown as tokens


# ----- files ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json", "config.json"])
def test_a_fifo_in_a_model_folder_is_refused_by_name_without_blocking(folder, name):
    (folder / name).unlink()
    os.mkfifo(folder / name)
    started = time.perf_counter()
    with pytest.raises(ModelLoadError, match="is a named pipe \\(FIFO\\), not a regular file"):
        open_checkpoint(folder)
    assert time.perf_counter() - started < 1.0


def test_a_fifo_named_gguf_is_refused_and_left_out_of_the_hf_cache_listing(tmp_path):
    from explorer.core.store import hf_cache_models

    snapshot = tmp_path / "models--org--m" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    os.mkfifo(snapshot / "m.gguf")
    with pytest.raises(ModelLoadError, match="m.gguf is a named pipe"):
        open_checkpoint(snapshot / "m.gguf")
    assert hf_cache_models(tmp_path) == []


def test_a_folder_that_cannot_be_read_gives_a_sentence(folder, monkeypatch):
    real_stat = os.stat

    def denied(path, *args, **kwargs):
        if str(path).startswith(str(folder)):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", denied)
    with pytest.raises(ModelLoadError, match="cannot be read: permission denied"):
        open_checkpoint(folder)


def test_a_valid_model_in_a_folder_with_a_non_utf8_name_loads(folder, tmp_path):
    renamed = os.path.join(os.fsencode(tmp_path), b"mod\xffel")       # not UTF-8: a Latin-1 file system's name
    os.rename(os.fsencode(folder), renamed)
    assert run_model(Path(os.fsdecode(renamed))) == "ran"


# ----- the forward pass ----------------------------------------------------------------------------
def overflowing(folder: Path) -> Path:
    """Finite weights whose logits are not: a final norm of 100s and one row of W_U of 3e38s, so that every
    product h_i w_i overflows float32."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    tensors["lm_head.weight"][5] = 3e38
    tensors["model.norm.weight"][:] = 100.0
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


def test_a_forward_pass_that_overflows_raises_nonfinite_and_the_decoder_keeps_no_half_step(folder):
    from explorer.core.decode import Decoder
    from explorer.core.runtime import load_model

    loaded = load_model(overflowing(folder))
    decoder = Decoder(loaded)
    with pytest.raises(NonFiniteError, match=r"the forward pass at position \d+ gave NaN or infinite logits") as caught:
        decoder.prefill(loaded.tokenizer.encode("The capital").ids[:3])
    assert str(caught.value).startswith(f"{folder}: ")
    assert decoder.kv_cache.length == 0 and decoder.trace.n_steps == 0


def test_the_api_raises_and_the_command_line_exits_2_on_a_non_finite_forward_pass(folder, tmp_path):
    import subprocess
    import sys

    import explorer

    path = overflowing(folder)
    with pytest.raises(NonFiniteError):
        explorer.load(path).run("The capital")
    result = subprocess.run([sys.executable, "-m", "explorer", "trace", "--model", str(path), "--prompt", "hi",
                             "--steps", "1", "--out", str(tmp_path / "t.npz")], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "NaN or infinite logits" in result.stderr and "Traceback" not in result.stderr


def test_every_refusal_is_an_explorer_error():
    for error in (InvalidConfigError, NonFiniteError, TokenizerError, ContextOverflowError):
        assert issubclass(error, ExplorerError)


def test_a_call_given_up_on_gives_stderr_back_at_once(capfd):
    """A tokenizer call that runs on past its bound: the caller gets a TokenizerError at the bound, and
    what it writes to stderr next (the command line's one sentence) reaches the terminal."""
    import threading

    from explorer.core.guarded import bounded_call, rust_panics_off_stderr

    release = threading.Event()
    started = time.perf_counter()
    with pytest.raises(TokenizerError, match="took too long"):
        with rust_panics_off_stderr():
            bounded_call(lambda: release.wait(10), 0.3, "the tokenizer took too long")
    assert time.perf_counter() - started < 2.0
    os.write(2, b"Error: the sentence\n")
    release.set()
    assert "Error: the sentence" in capfd.readouterr().err


def test_the_bounded_encoding_gives_the_librarys_own_ids_and_offsets(folder):
    from explorer.core.runtime import load_model
    from tests.core.tiny_checkpoints import CORPUS

    tokenizer = load_model(folder).tokenizer
    assert tokenizer.context == 64
    for text in CORPUS:
        expected = tokenizer.tokenizer.encode(text, add_special_tokens=True)
        tokens = tokenizer.encode(text)
        assert tokens.ids.tolist() == expected.ids and list(tokens.spans) == expected.offsets


def test_a_panic_in_a_tokenizer_without_a_model_is_a_tokenizer_error(folder, capfd):
    from tokenizers import Tokenizer

    from explorer.core.tokens import TextTokenizer

    mutate_tokenizer(folder / "tokenizer.json", "split", 0, "(\\w+\\s?)*$")
    tokenizer = TextTokenizer(Tokenizer.from_file(str(folder / "tokenizer.json")))
    with pytest.raises(TokenizerError, match="^the tokenizer failed on the text \\(Onig"):
        tokenizer.encode("word " * 300 + "!")
    assert "panicked" not in capfd.readouterr().err


def test_a_tokenizer_json_with_millions_of_merges_is_refused_from_its_bytes(folder):
    """5 million merges in 57 MB took the tokenizers library 13 s and 2.5 GB to build."""
    from explorer.core.loaders.hf import MAX_TOKENIZER_STRINGS

    spec = json.loads((folder / "tokenizer.json").read_text())
    spec["model"]["merges"] = [spec["model"]["merges"][0]] * (MAX_TOKENIZER_STRINGS + 10)
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    started = time.perf_counter()
    with pytest.raises(ModelLoadError, match=f"tokenizer.json holds about [0-9,]+ merges, more than the "
                                             f"{MAX_TOKENIZER_STRINGS:,} of any tokenizer"):
        open_checkpoint(folder)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("spoil, part", [(lambda spec: spec["model"].update(type="Florp"), "its model is"),
                                         (lambda spec: spec["model"].update(merges=[[1, 2]]), "its model.merges is")])
def test_a_tokenizer_part_of_no_known_kind_is_named_without_serde_words(folder, spoil, part):
    """tokenizers says "data did not match any variant of untagged enum ModelUntagged" (boundary27: jargon)."""
    spec = json.loads((folder / "tokenizer.json").read_text())
    spoil(spec)
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    message = refused(folder)
    assert f"tokenizer.json is not a valid tokenizer file ({part} of no kind the tokenizers library reads at line 1" \
        in message and "untagged" not in message, message
