"""Structure-aware fuzzing of model files: every mutation of a good tiny model either loads and gives
finite numbers, or is refused with an ExplorerError of one sentence, within a few seconds.

Each strategy changes one field of a valid file the way a broken converter or a hostile file would:
a safetensors header entry, a GGUF metadata value or tensor record, a config.json value, a part of a
tokenizer.json. Hypothesis runs derandomized with a bounded number of examples, so the suite is the
same on every run and takes seconds. Anything else escaping (a TypeError, a tokenizers panic, which is
a BaseException) or NaN logits after a load that "worked" fails the test.

Run once against the code before the boundary (commit 35a5ee9, 40 examples per file kind), it found 28
distinct failures, all kept in test_model_file_boundary.py: safetensors offsets None or [],
a shape 'F32', [[1]] or None, a dtype [] (tracebacks), offsets moved by one byte (accepted: NaN logits);
config partial_rotary_factor 2 or -1 (RuntimeError), rms_norm_eps -1 (NaN logits); GGUF merges or tokens
as integers or a scalar, tokens a string, head_count_kv or embedding_length a string, head_count 0 or 3,
embedding_length 0, alignment an array or a string, Q4_0 rows not whole blocks (tracebacks), an
alignment of 7 (NaN logits);
and through the command line a NaN weight and rope_theta 0 exited 0, string offsets and a string
alignment ended in a traceback. Its tokenizer.json mutations found nothing there; a 1,000-example run
after the boundary found one more (a GGUF block_count of 2^40: MemoryError), also kept.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.core.errors import ExplorerError
from tests.core import fuzz_files as ff
from tests.core.tiny_checkpoints import write_hf_folder, write_llama_gguf

PROMPT = "The capital of France is"
SECONDS = 5.0
EXAMPLES = int(os.environ.get("EXPLORER_FUZZ_EXAMPLES", "40"))       # a longer hunt: EXPLORER_FUZZ_EXAMPLES=300
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def run_model(path: Path) -> str:
    """'ran' (finite logits) or 'refused' (one-sentence ExplorerError); anything else fails the test."""
    from explorer.core.decode import Decoder
    from explorer.core.runtime import load_model

    started = time.perf_counter()
    try:
        loaded = load_model(path)
        tokens = loaded.tokenizer.encode(PROMPT)
        decoder = Decoder(loaded, capacity=64)
        trace = decoder.prefill(tokens)
        logits = decoder.logits_at(len(tokens) - 1)
    except ExplorerError as error:
        message = str(error)
        assert message and "\n" not in message, f"not one sentence: {message!r}"
        outcome = "refused"
    else:
        assert np.isfinite(logits).all(), "the model ran and gave non-finite logits, silently"
        assert np.isfinite(trace.steps[0].top_probs).all(), "non-finite probabilities, silently"
        outcome = "ran"
    assert time.perf_counter() - started < SECONDS, f"took {time.perf_counter() - started:.1f} s"
    return outcome


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A good tiny llama folder and the same model as GGUF (model.gguf beside it)."""
    from tokenizers import Tokenizer

    root = tmp_path_factory.mktemp("good")
    config, tensors = write_hf_folder(root / "hf")
    write_llama_gguf(root / "model.gguf", config, tensors, Tokenizer.from_file(str(root / "hf" / "tokenizer.json")))
    assert run_model(root / "hf") == "ran" and run_model(root / "model.gguf") == "ran"
    return root


def fresh_folder(good: Path, tmp_path: Path) -> Path:
    folder = tmp_path / f"m{time.perf_counter_ns()}"
    shutil.copytree(good / "hf", folder)
    return folder


# ----- safetensors --------------------------------------------------------------------------------
ODD = st.sampled_from([None, True, -1, 0, 3, 2 ** 64, 1.5, math.nan, "4", [], {}, [[1]], "F32"])
DTYPES = st.one_of(st.sampled_from(["F32", "F16", "BF16", "F64", "I32", "U8", "BOOL", "F99", "", "f32"]), ODD)
SHAPES = st.one_of(st.lists(st.integers(-3, 80), max_size=3), ODD)
OFFSETS = st.one_of(st.lists(st.integers(-8, 70_000), max_size=3), ODD)


@st.composite
def safetensors_mutation(draw):
    kind = draw(st.sampled_from(["dtype", "shape", "data_offsets", "shift", "overlap", "nonfinite", "length",
                                 "metadata", "drop_field"]))
    return kind, draw(st.integers(0, 10 ** 6)), draw({
        "dtype": DTYPES, "shape": SHAPES, "data_offsets": OFFSETS, "shift": st.integers(-40, 40),
        "overlap": st.integers(0, 64), "nonfinite": st.sampled_from([math.nan, math.inf, -math.inf]),
        "length": st.integers(0, 2 ** 64 - 1), "metadata": ODD, "drop_field": st.sampled_from(
            ["dtype", "shape", "data_offsets"])}[kind])


def mutate_safetensors(path: Path, kind: str, pick: int, value) -> None:
    header, data = ff.read_safetensors(path)
    names = sorted(n for n in header if n != "__metadata__")
    name = names[pick % len(names)]
    entry, length = header[name], None
    if kind in ("dtype", "shape", "data_offsets"):
        entry[kind] = value
    elif kind == "drop_field":
        del entry[value]
    elif kind == "shift":
        entry["data_offsets"] = [entry["data_offsets"][0] + value, entry["data_offsets"][1] + value]
    elif kind == "overlap":                  # a second name over the same bytes, shifted a little
        begin, end = entry["data_offsets"]
        header["model.layers.0.extra.weight"] = {**entry, "data_offsets": [begin + value, end + value]}
    elif kind == "nonfinite":
        begin, end = entry["data_offsets"]
        at = begin + 4 * (pick % ((end - begin) // 4))
        data = data[:at] + struct.pack("<f", value) + data[at + 4:]
    elif kind == "length":
        length = value
    elif kind == "metadata":
        header["__metadata__"] = value
    ff.write_safetensors(path, header, data, length)


@FUZZ
@given(mutation=safetensors_mutation())
def test_a_mutated_safetensors_file_runs_finite_or_is_refused(good, tmp_path, mutation):
    folder = fresh_folder(good, tmp_path)
    mutate_safetensors(folder / "model.safetensors", *mutation)
    run_model(folder)


# ----- config.json --------------------------------------------------------------------------------
CONFIG_KEYS = ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
               "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "max_position_embeddings",
               "hidden_act", "vocab_size", "tie_word_embeddings", "bos_token_id", "eos_token_id",
               "partial_rotary_factor", "attention_bias", "sliding_window", "model_type"]
CONFIG_VALUES = st.sampled_from([0, -1, -5, 1, 2, 3, 7, 8, 16, 1e-30, 0.5, 2.0, math.nan, math.inf, -math.inf,
                                 "x", "silu", "gelu_new", "relu", "tanh", "nonsense", None, [], [1], {}, True,
                                 False, 2 ** 63, 1e308, "mistral", "llama"])
ROPE_SCALING = st.fixed_dictionaries({
    "rope_type": st.sampled_from(["llama3", "linear", "yarn", "default", "dynamic", 3]),
    "factor": CONFIG_VALUES, "low_freq_factor": CONFIG_VALUES, "high_freq_factor": CONFIG_VALUES,
    "original_max_position_embeddings": CONFIG_VALUES})


@FUZZ
@given(changes=st.dictionaries(st.sampled_from(CONFIG_KEYS), CONFIG_VALUES, min_size=1, max_size=2),
       rope=st.one_of(st.none(), ROPE_SCALING))
def test_a_mutated_config_runs_finite_or_is_refused(good, tmp_path, changes, rope):
    folder = fresh_folder(good, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    if rope is not None:
        config["rope_scaling"] = rope
    (folder / "config.json").write_text(json.dumps(config))
    run_model(folder)


# ----- tokenizer.json -----------------------------------------------------------------------------
SPLIT_PATTERNS = ["(a+)+$", "(\\w+\\s?)*$", "(?:x+x+)+y", "\\p{L}+", "[", "(", "(?<=a)b", "a{1000000}", ""]


@st.composite
def tokenizer_mutation(draw):
    kind = draw(st.sampled_from(["split", "vocab", "merges", "model_type", "added", "normalizer"]))
    value = draw({"split": st.sampled_from(SPLIT_PATTERNS), "vocab": ODD, "merges": st.one_of(
        ODD, st.sampled_from(["a", "a b c", " ", ["a"], ["Ġ", "t", "x"], ["zz", "qq"]])),
        "model_type": st.sampled_from(["Unigram", "WordLevel", "WordPiece", "Nonsense", None]),
        "added": st.one_of(ODD, st.sampled_from([10 ** 9, -1, ""])),
        "normalizer": st.sampled_from([{"type": "Replace", "pattern": {"Regex": "(a+)+$"}, "content": "x"},
                                       {"type": "Nonsense"}, {"type": "Prepend", "prepend": 3}])}[kind])
    return kind, draw(st.integers(0, 10 ** 6)), value


def mutate_tokenizer(path: Path, kind: str, pick: int, value) -> None:
    spec = json.loads(path.read_text())
    model = spec["model"]
    if kind == "split":
        spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": value}, "behavior": "Isolated", "invert": False},
            spec["pre_tokenizer"]]}
    elif kind == "vocab":
        piece = sorted(model["vocab"])[pick % len(model["vocab"])]
        model["vocab"][piece] = value
    elif kind == "merges":
        model["merges"][pick % len(model["merges"])] = value
    elif kind == "model_type":
        model["type"] = value
    elif kind == "added":
        spec["added_tokens"][0]["id" if pick % 2 else "content"] = value
    elif kind == "normalizer":
        spec["normalizer"] = value
    path.write_text(json.dumps(spec))


@FUZZ
@given(mutation=tokenizer_mutation())
def test_a_mutated_tokenizer_runs_finite_or_is_refused(good, tmp_path, mutation):
    folder = fresh_folder(good, tmp_path)
    mutate_tokenizer(folder / "tokenizer.json", *mutation)
    run_model(folder)


# ----- GGUF ---------------------------------------------------------------------------------------
GGUF_KEYS = ["general.alignment", "llama.block_count", "llama.context_length", "llama.embedding_length",
             "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
             "llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base", "llama.rope.dimension_count",
             "llama.rope.scaling.type", "llama.rope.scaling.factor", "tokenizer.ggml.tokens",
             "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
             "tokenizer.ggml.model", "tokenizer.ggml.pre", "general.architecture", "tokenizer.ggml.scores",
             "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.add_space_prefix", "gemma3.attention.sliding_window",
             "gemma3.rope.freq_base_swa", "gemma3.attention.key_length", "gemma3.attention.head_count"]
GGUF_VALUES = st.sampled_from([
    ff.Value(ff.STRING, "x"), ff.Value(ff.STRING, "linear"), ff.Value(ff.U32, 0), ff.Value(ff.U32, 1),
    ff.Value(ff.U32, 3), ff.Value(ff.U32, 64), ff.Value(ff.I32, -5), ff.Value(ff.F32, math.nan),
    ff.Value(ff.F32, math.inf), ff.Value(ff.F32, 0.0), ff.Value(ff.F64, -1.0), ff.Value(ff.U64, 2 ** 40),
    ff.Value(ff.BOOL, True), ff.Value(ff.ARRAY, [1, 2, 3], ff.I32), ff.Value(ff.ARRAY, ["a", "b"], ff.STRING),
    ff.Value(ff.ARRAY, ["ab"], ff.STRING), ff.Value(ff.ARRAY, [], ff.STRING), ff.nested_array(3),
    ff.Value(ff.ARRAY, [math.nan, 1.0], ff.F32), ff.Value(ff.ARRAY, ["▁" * 5000], ff.STRING)])


@st.composite
def gguf_mutation(draw):
    kind = draw(st.sampled_from(["value", "duplicate_key", "tensor_dims", "tensor_type", "tensor_offset",
                                 "duplicate_tensor", "nonfinite", "counts"]))
    value = draw({"value": st.tuples(st.sampled_from(GGUF_KEYS), GGUF_VALUES), "duplicate_key": st.sampled_from(
        GGUF_KEYS), "tensor_dims": st.lists(st.integers(0, 100), max_size=3), "tensor_type": st.sampled_from(
        [1, 2, 8, 12, 30, 99]), "tensor_offset": st.integers(-64, 64), "duplicate_tensor": st.just(None),
        "nonfinite": st.sampled_from([math.nan, math.inf]), "counts": st.tuples(
            st.integers(0, 2 ** 20), st.integers(0, 2 ** 20))}[kind])
    return kind, draw(st.integers(0, 10 ** 6)), value


def mutate_gguf(parts: ff.GGUFParts, kind: str, pick: int, value) -> None:
    tensor = parts.tensors[pick % len(parts.tensors)]
    if kind == "value":
        key, new = value
        parts.fields = [(k, v) for k, v in parts.fields if k != key] + [(key, new)]
        if key == "general.alignment" and new.type == ff.U32 and new.value in (1, 64):
            parts.alignment = new.value                      # a legal alignment, honoured by the layout
    elif kind == "duplicate_key":
        parts.fields.append(next(((k, v) for k, v in parts.fields if k == value), (value, ff.Value(ff.U32, 7))))
    elif kind == "tensor_dims":
        tensor.dims = value
    elif kind == "tensor_type":
        tensor.type = value
    elif kind == "tensor_offset":
        tensor.offset = max(0, sum(len(t.data) for t in parts.tensors[:pick % len(parts.tensors)]) + value)
    elif kind == "duplicate_tensor":
        parts.tensors.append(ff.TensorRecord(tensor.name, list(tensor.dims), tensor.type, tensor.data))
    elif kind == "nonfinite":
        at = 4 * (pick % (len(tensor.data) // 4))
        tensor.data = tensor.data[:at] + struct.pack("<f", value) + tensor.data[at + 4:]
    elif kind == "counts":
        parts.counts = value


@FUZZ
@given(mutation=gguf_mutation())
def test_a_mutated_gguf_runs_finite_or_is_refused(good, tmp_path, mutation):
    parts = ff.read_gguf(good / "model.gguf")
    mutate_gguf(parts, *mutation)
    path = tmp_path / f"m{time.perf_counter_ns()}.gguf"
    ff.write_gguf(path, parts)
    run_model(path)


@pytest.fixture(scope="module")
def sentencepiece_gguf(tmp_path_factory) -> Path:
    """A tiny Gemma 3 GGUF with a SentencePiece vocabulary (scores, token types, byte pieces)."""
    from tests.core.tiny_checkpoints import write_gemma3_gguf

    path = tmp_path_factory.mktemp("spm") / "gemma.gguf"
    write_gemma3_gguf(path)
    assert run_model(path) == "ran"
    return path


@FUZZ
@given(mutation=gguf_mutation())
def test_a_mutated_sentencepiece_gguf_runs_finite_or_is_refused(sentencepiece_gguf, tmp_path, mutation):
    parts = ff.read_gguf(sentencepiece_gguf)
    mutate_gguf(parts, *mutation)
    path = tmp_path / f"m{time.perf_counter_ns()}.gguf"
    ff.write_gguf(path, parts)
    run_model(path)


def test_the_gguf_serializer_writes_back_a_file_that_runs(good, tmp_path):
    ff.write_gguf(tmp_path / "same.gguf", ff.read_gguf(good / "model.gguf"))
    assert run_model(tmp_path / "same.gguf") == "ran"


# ----- the command line ---------------------------------------------------------------------------
def _nan_weight(good, tmp_path):
    folder = fresh_folder(good, tmp_path)
    mutate_safetensors(folder / "model.safetensors", "nonfinite", 3, math.nan)
    return folder


def _string_offsets(good, tmp_path):
    folder = fresh_folder(good, tmp_path)
    mutate_safetensors(folder / "model.safetensors", "data_offsets", 0, ["0", "4"])
    return folder


def _string_alignment(good, tmp_path):
    parts = ff.read_gguf(good / "model.gguf")
    mutate_gguf(parts, "value", 0, ("general.alignment", ff.Value(ff.STRING, "x")))
    ff.write_gguf(tmp_path / "a.gguf", parts)
    return tmp_path / "a.gguf"


def _zero_rope_theta(good, tmp_path):
    folder = fresh_folder(good, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "rope_theta": 0}))
    return folder


def trace_command(path: Path, out: Path) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "explorer", "trace", "--model", str(path), "--prompt", "hi",
                             "--steps", "1", "--out", str(out)], capture_output=True, text=True, timeout=120)
    return result, time.perf_counter() - started


@pytest.fixture(scope="module")
def normal_run_seconds(good, tmp_path_factory) -> float:
    """How long the same command takes on the good model: a fresh interpreter imports torch first, which
    on a busy machine is most of the time, so a refusal is timed against this."""
    result, seconds = trace_command(good / "hf", tmp_path_factory.mktemp("normal") / "t.npz")
    assert result.returncode == 0, result.stderr[-2000:]
    return seconds


@pytest.mark.parametrize("build", [_nan_weight, _string_offsets, _string_alignment, _zero_rope_theta],
                         ids=["NaN weight", "string offsets", "string alignment", "rope_theta 0"])
def test_the_command_line_refuses_a_fuzzed_file_in_one_line_with_exit_2(good, tmp_path, build, normal_run_seconds):
    path = build(good, tmp_path)
    result, seconds = trace_command(path, tmp_path / "t.npz")
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(path) in result.stderr
    assert seconds < normal_run_seconds + SECONDS, f"{seconds:.1f} s against {normal_run_seconds:.1f} s"
