"""Hostile model files, each built from the good tiny Llama (folder `model/` and `model.gguf` in the case's
folder) by changing one thing: safetensors headers, GGUF fields, config values, tokenizers, file kinds.
Each is run through `trace` (or `models`), the way a person meets it."""
from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path

import numpy as np

from tests.boundary.harness import Case, Run
from tests.core import fuzz_files as ff
from tests.core.tiny_checkpoints import write_gemma3_gguf

PROMPT = "The capital of France is"


def trace(path, *extra: str) -> Run:
    return Run(("trace", "--model", str(path), "--prompt", PROMPT, "--steps", "2", "--out", "out.npz", *extra))


# ----- safetensors -------------------------------------------------------------------------------
def _header_edit(change):
    def build(case: Path) -> Run:
        weights = case / "model" / "model.safetensors"
        header, data = ff.read_safetensors(weights)
        change(header, data)
        ff.write_safetensors(weights, header, data)
        return trace(case / "model")
    return build


def _entry(header: dict, name: str = "model.norm.weight") -> dict:
    return header[name]


def _first(header: dict) -> str:
    return min((entry["data_offsets"][0], name) for name, entry in header.items() if name != "__metadata__")[1]


def _set(key, value, name="model.norm.weight"):
    return lambda header, data: _entry(header, name).__setitem__(key, value)


def _overlap(header, data):
    first = _first(header)
    begin, end = header[first]["data_offsets"]
    header["model.layers.0.extra.weight"] = {**header[first], "data_offsets": [begin + 4, end + 4]}


def _misaligned(header, data):
    """Every offset moved by 2 bytes into the data: float32s that straddle their neighbours."""
    for name, entry in header.items():
        if name != "__metadata__":
            entry["data_offsets"] = [entry["data_offsets"][0] + 2, entry["data_offsets"][1] + 2]


def _nonfinite_weight(value: float):
    def build(case: Path) -> Run:
        weights = case / "model" / "model.safetensors"
        header, data = ff.read_safetensors(weights)
        begin = header["model.layers.1.mlp.up_proj.weight"]["data_offsets"][0]
        data = data[:begin + 12] + struct.pack("<f", value) + data[begin + 16:]
        ff.write_safetensors(weights, header, data)
        return trace(case / "model")
    return build


SAFETENSORS = [
    Case("safetensors offsets of 3 entries", "traceback", _header_edit(_set("data_offsets", [0, 64, 128])),
         says="model.safetensors"),
    Case("safetensors offsets as strings", "traceback", _header_edit(_set("data_offsets", ["0", "128"])),
         says="model.safetensors"),
    Case("safetensors dtype a list", "traceback", _header_edit(_set("dtype", ["F32"])), says="model.safetensors"),
    Case("safetensors shape null", "traceback", _header_edit(_set("shape", None)), says="model.safetensors"),
    Case("safetensors shape negative", "traceback", _header_edit(_set("shape", [-32])), says="model.safetensors"),
    Case("safetensors tensors overlap", "nan", _header_edit(_overlap), says="overlaps"),
    Case("safetensors offsets misaligned", "nan", _header_edit(_misaligned), says="model.safetensors"),
    Case("safetensors NaN weight", "nan", _nonfinite_weight(math.nan), says="nan"),
    Case("safetensors Inf weight", "nan", _nonfinite_weight(math.inf), says="inf"),
    Case("safetensors header length past the file", "bomb",
         lambda case: (case.joinpath("model", "model.safetensors").write_bytes(struct.pack("<Q", 1 << 40) + b"{}"),
                       trace(case / "model"))[1], says="model.safetensors"),
]


# ----- GGUF --------------------------------------------------------------------------------------
def _gguf(change):
    def build(case: Path) -> Run:
        parts = ff.read_gguf(case / "model.gguf")
        change(parts)
        ff.write_gguf(case / "bad.gguf", parts)
        return trace(case / "bad.gguf")
    return build


def _field(key: str, value: ff.Value):
    def change(parts: ff.GGUFParts) -> None:
        parts.fields = [(k, v) for k, v in parts.fields if k != key] + [(key, value)]
    return change


def _tensor(name: str, change):
    def edit(parts: ff.GGUFParts) -> None:
        change(next(t for t in parts.tensors if t.name == name))
    return edit


def _poke(value: float):
    def change(tensor: ff.TensorRecord) -> None:
        tensor.data = tensor.data[:20] + struct.pack("<f", value) + tensor.data[24:]
    return change


def _q8_rows_not_whole(tensor: ff.TensorRecord) -> None:
    """A Q8_0 tensor (blocks of 32 values, 34 bytes) whose rows are 48 values: one and a half blocks."""
    tensor.type, tensor.dims, tensor.data = 8, [48, 32], bytes(34 * 48)


def _duplicate_key(parts: ff.GGUFParts) -> None:
    parts.fields.append(("llama.block_count", ff.Value(ff.U32, 7)))


def _duplicate_tensor(parts: ff.GGUFParts) -> None:
    t = parts.tensors[2]
    parts.tensors.append(ff.TensorRecord(t.name, list(t.dims), t.type, t.data))


def _spliced(stem: str, value: bytes, name: str = "bad.gguf"):
    """A field written byte by byte after the header (too big or too deep for the fuzz suite's writer), its
    key padded so that the field's bytes are a multiple of the alignment and the tensors stay where they were."""
    def build(case: Path) -> Run:
        raw = (case / "model.gguf").read_bytes()
        key = stem.encode() + b"x" * (-(8 + len(stem) + len(value)) % 32)
        keys = struct.unpack_from("<Q", raw, 16)[0]
        with (case / name).open("wb") as out:
            out.write(raw[:16] + struct.pack("<Q", keys + 1) + struct.pack("<Q", len(key)) + key + value)
            out.write(raw[24:])
        return trace(case / name)
    return build


def _nested(depth: int) -> bytes:
    """An array of an array of ... `depth` deep, of two U32s at the bottom."""
    return (struct.pack("<I", ff.ARRAY) + struct.pack("<IQ", ff.ARRAY, 1) * depth
            + struct.pack("<IQ", ff.U32, 2) + struct.pack("<II", 1, 2))


# A 64 MB numeric array under a key nothing reads.
UNRELATED_ARRAY = struct.pack("<IIQ", ff.ARRAY, ff.U32, 16 << 20) + np.arange(16 << 20, dtype="<u4").tobytes()


def _long_merges(parts: ff.GGUFParts) -> None:
    """64 MB of merges (a million of 60 bytes), under the 2^20 count cap, naming pieces the vocabulary lacks."""
    merges = [f"{'x' * 30}{i:07d} {'y' * 22}" for i in range(1_000_000)]
    _field("tokenizer.ggml.merges", ff.Value(ff.ARRAY, merges, ff.STRING))(parts)


def _long_sentencepiece_pieces(case: Path) -> Run:
    """A Gemma 3 (SentencePiece) vocabulary with 1,000 pieces of 1,000 bytes each, at the piece cap: the merge
    builder looks at every split of every piece, which was quadratic in a piece's length."""
    write_gemma3_gguf(case / "gemma.gguf")
    parts = ff.read_gguf(case / "gemma.gguf")
    fields = dict(parts.fields)
    pieces = [f"{index:04d}" + "a" * 996 for index in range(1000)]
    tokens = list(fields["tokenizer.ggml.tokens"].value) + pieces
    scores = list(fields["tokenizer.ggml.scores"].value) + [-100.0] * len(pieces)
    types = list(fields["tokenizer.ggml.token_type"].value) + [1] * len(pieces)
    for key, values, item in (("tokenizer.ggml.tokens", tokens, ff.STRING), ("tokenizer.ggml.scores", scores, ff.F32),
                              ("tokenizer.ggml.token_type", types, ff.I32)):
        _field(key, ff.Value(ff.ARRAY, values, item))(parts)
    ff.write_gguf(case / "bad.gguf", parts)
    return trace(case / "bad.gguf")


GGUF = [
    Case("GGUF SentencePiece pieces of 1,000 bytes", "hang", _long_sentencepiece_pieces, outcome="either"),
    Case("GGUF alignment a string", "traceback", _gguf(_field("general.alignment", ff.Value(ff.STRING, "x"))),
         says="general.alignment"),
    Case("GGUF alignment NaN", "traceback", _gguf(_field("general.alignment", ff.Value(ff.F32, math.nan))),
         says="general.alignment"),
    Case("GGUF alignment not a power of two", "traceback",
         _gguf(_field("general.alignment", ff.Value(ff.U32, 24))), says="general.alignment"),
    Case("GGUF head_count a string", "traceback",
         _gguf(_field("llama.attention.head_count", ff.Value(ff.STRING, "4"))), says="head_count"),
    Case("GGUF tokens as integers", "traceback",
         _gguf(_field("tokenizer.ggml.tokens", ff.Value(ff.ARRAY, list(range(320)), ff.U32))), says="tokens"),
    Case("GGUF merges without a space", "traceback",
         _gguf(_field("tokenizer.ggml.merges", ff.Value(ff.ARRAY, ["he", "is"], ff.STRING))), says="merge"),
    Case("GGUF bos id a string", "traceback",
         _gguf(_field("tokenizer.ggml.bos_token_id", ff.Value(ff.STRING, "0"))), says="bos_token_id"),
    Case("GGUF arrays nested 200,000 deep", "traceback",
         _spliced("general.nested", _nested(200_000)), says="bad.gguf"),
    Case("GGUF Q8_0 rows not whole blocks", "traceback",
         _gguf(_tensor("blk.0.ffn_down.weight", _q8_rows_not_whole)), says="blk.0.ffn_down.weight"),
    Case("GGUF duplicate key", "traceback", _gguf(_duplicate_key), says="llama.block_count"),
    Case("GGUF duplicate tensor name", "traceback", _gguf(_duplicate_tensor), says="bad.gguf"),
    Case("GGUF NaN weight", "nan", _gguf(_tensor("blk.1.ffn_up.weight", _poke(math.nan))), says="nan"),
    Case("GGUF Inf weight", "nan", _gguf(_tensor("blk.1.ffn_up.weight", _poke(-math.inf))), says="inf"),
    Case("GGUF freq_base 0", "nan", _gguf(_field("llama.rope.freq_base", ff.Value(ff.F32, 0.0))), says="freq_base"),
    Case("GGUF epsilon NaN", "nan",
         _gguf(_field("llama.attention.layer_norm_rms_epsilon", ff.Value(ff.F32, math.nan))), says="eps"),
    Case("GGUF an unrelated 64 MB numeric array", "bomb", _spliced("bomb.array", UNRELATED_ARRAY), outcome="either"),
    Case("GGUF a 64 MB merges list", "bomb", _gguf(_long_merges), outcome="either"),
    Case("GGUF array count past the file", "bomb",
         _gguf(_field("tokenizer.ggml.scores", ff.Value(ff.ARRAY, [], ff.F32))), outcome="either"),
    Case("GGUF truncated", "traceback",
         lambda case: ((case / "bad.gguf").write_bytes((case / "model.gguf").read_bytes()[:-100]),
                       trace(case / "bad.gguf"))[1], says="truncated"),
]


# ----- config.json -------------------------------------------------------------------------------
def _config(**changes):
    def build(case: Path) -> Run:
        path = case / "model" / "config.json"
        config = {**json.loads(path.read_text()), **changes}
        path.write_text(json.dumps(config))          # NaN is written as NaN, as a careless exporter would
        return trace(case / "model")
    return build


LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 0.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 32}
CONFIG = [
    Case("config llama3 low_freq_factor 0", "traceback", _config(rope_scaling=LLAMA3), says="low_freq_factor"),
    Case("config partial_rotary_factor 2", "traceback", _config(partial_rotary_factor=2.0),
         says="partial_rotary_factor"),
    Case("config unknown hidden_act", "traceback", _config(hidden_act="swishy"), says="hidden_act"),
    Case("config sliding_window -5", "traceback",
         _config(model_type="mistral", architectures=["MistralForCausalLM"], sliding_window=-5),
         says="sliding_window"),
    Case("config query_pre_attn_scalar 0", "traceback",
         _config(model_type="gemma2", architectures=["Gemma2ForCausalLM"], query_pre_attn_scalar=0),
         says="config.json"),
    Case("config topk_group above n_group", "traceback",
         _config(model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"], n_group=2, topk_group=4,
                 n_routed_experts=4, num_experts_per_tok=2), says="config.json"),
    Case("config rope_theta 0", "nan", _config(rope_theta=0), says="rope_theta"),
    Case("config rms_norm_eps NaN", "nan", _config(rms_norm_eps=math.nan), says="rms_norm_eps"),
    Case("config rms_norm_eps -1", "nan", _config(rms_norm_eps=-1.0), says="rms_norm_eps"),
    Case("config vocab_size a string", "traceback", _config(vocab_size="320"), says="vocab_size"),
    Case("config num_attention_heads 0", "traceback", _config(num_attention_heads=0), says="num_attention_heads"),
    Case("config head_dim a float", "traceback", _config(head_dim=8.5), says="head_dim"),
    Case("config auto_map asks for code", "traceback",
         _config(auto_map={"AutoModelForCausalLM": "evil.Model"}), says="custom code"),
    Case("config is a JSON list", "traceback",
         lambda case: ((case / "model" / "config.json").write_text("[1, 2]"), trace(case / "model"))[1],
         says="config.json"),
]


# ----- tokenizer ---------------------------------------------------------------------------------
def _tokenizer(change):
    def build(case: Path) -> Run:
        path = case / "model" / "tokenizer.json"
        spec = json.loads(path.read_text(encoding="utf-8"))
        change(spec)
        path.write_text(json.dumps(spec), encoding="utf-8")
        return trace(case / "model")
    return build


def _backtracking(spec: dict) -> None:
    """A split regex that backtracks catastrophically on a run of 'a' not followed by what it wants."""
    spec["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated",
                             "invert": False}


def _backtracking_prompt(length: int):
    def build(case: Path) -> Run:
        run = _tokenizer(_backtracking)(case)
        argv = list(run.argv)
        argv[argv.index("--prompt") + 1] = "a" * length + "!"
        return Run(tuple(argv))
    return build


TOKENIZER = [
    Case("tokenizer regex backtracks on 31 characters", "hang", _backtracking_prompt(30), outcome="either"),
    Case("tokenizer regex backtracks on 1.4 KB", "hang", _backtracking_prompt(1400), outcome="either"),
    Case("tokenizer piece of 5,000 bytes", "bomb",
         _tokenizer(lambda spec: spec["model"]["vocab"].setdefault("x" * 5000, 999)), says="5,000 bytes"),
    Case("tokenizer of two million entries", "bomb",
         _tokenizer(lambda spec: spec["model"]["vocab"].update({f"p{i}": i + 1000 for i in range(2_000_000)})),
         says="vocabulary entries"),
    Case("tokenizer nested 100,000 deep", "traceback",
         lambda case: ((case / "model" / "tokenizer.json").write_text("[" * 100_000 + "]" * 100_000),
                       trace(case / "model"))[1], says="tokenizer.json"),
    Case("tokenizer not UTF-8", "message",
         lambda case: ((case / "model" / "tokenizer.json").write_bytes(b"\xff\xfe{}"), trace(case / "model"))[1],
         says="tokenizer.json"),
    Case("tokenizer model type unknown", "traceback",
         _tokenizer(lambda spec: spec["model"].__setitem__("type", "Evil")), says="tokenizer.json"),
    Case("tokenizer_config with a Jinja template that would run code", "traceback",
         lambda case: ((case / "model" / "tokenizer_config.json").write_text(json.dumps({
             "chat_template": "{{ cycler.__init__.__globals__.os.system('touch pwned') }}"})),
             trace(case / "model"))[1], outcome="works",
         keeps=lambda case: _not_there(case / "pwned")),
]


def _not_there(path: Path) -> None:
    assert not path.exists(), f"{path} exists: code from a model file ran"


# ----- what kind of file is there ---------------------------------------------------------------
def _fifo(relative: str, open_path: str = "model"):
    def build(case: Path) -> Run:
        path = case / relative
        if path.exists():
            path.unlink()
        os.mkfifo(path)
        return trace(case / open_path)
    return build


def _sharded_with_fifo(case: Path) -> Run:
    folder = case / "model"
    header, data = ff.read_safetensors(folder / "model.safetensors")
    names = [name for name in header if name != "__metadata__"]
    index = {"metadata": {}, "weight_map": {name: "model-00001-of-00002.safetensors" for name in names}}
    index["weight_map"][names[-1]] = "model-00002-of-00002.safetensors"
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    os.mkfifo(folder / "model-00002-of-00002.safetensors")
    return trace(folder)


def _hf_cache_fifo(case: Path) -> Run:
    snapshot = case / "hub" / "models--someone--tiny" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json"):
        (snapshot / name).write_bytes((case / "model" / name).read_bytes())
    os.mkfifo(snapshot / "model.safetensors")
    return Run(("models",), env={"HF_HUB_CACHE": str(case / "hub")})


def _symlink(target: str, name: str):
    def build(case: Path) -> Run:
        (case / name).symlink_to(target)
        return trace(case / name)
    return build


def _text_link(case: Path) -> Run:
    (case / "model" / "notes.txt").write_text("12345678 these are notes\n")
    (case / "model" / "model.safetensors").unlink()
    (case / "model" / "model.safetensors").symlink_to(case / "model" / "notes.txt")
    return trace(case / "model")


def _non_utf8_name(case: Path) -> Run:
    name = os.fsencode(case) + b"/mod\xe9le"
    os.rename(case / "model", name)
    return Run((b"trace".decode(), "--model", os.fsdecode(name), "--prompt", PROMPT, "--steps", "2",
                "--out", "out.npz"))


FILE_KINDS = [
    Case("model.safetensors a FIFO", "hang", _fifo("model/model.safetensors"), says="FIFO"),
    Case("a .gguf that is a FIFO", "hang", _fifo("pipe.gguf", "pipe.gguf"), says="FIFO"),
    Case("config.json a FIFO", "hang", _fifo("model/config.json"), says="FIFO"),
    Case("tokenizer.json a FIFO", "hang", _fifo("model/tokenizer.json"), says="FIFO"),
    Case("an extra shard a FIFO", "hang", _sharded_with_fifo, says="FIFO"),
    Case("a FIFO inside the Hugging Face cache (models)", "hang", _hf_cache_fifo, outcome="works"),
    # Folders and files without permission: tests/boundary/permissions.py, run as a person without privileges.
    Case("a .gguf linked to /dev/zero", "hang", _symlink("/dev/zero", "zero.gguf"), says="zero.gguf"),
    Case("weights linked to a text file", "message", _text_link, says="not a safetensors file"),
    Case("a valid model in a folder with a non-UTF-8 name", "message", _non_utf8_name, outcome="works"),
    Case("a model path that does not exist", "message", lambda case: trace(case / "nowhere"), says="nowhere"),
    Case("a folder named like a .gguf", "message",
         lambda case: ((case / "dir.gguf").mkdir(), trace(case / "dir.gguf"))[1], says="dir.gguf"),
    Case("a pickle beside the weights is never unpickled", "traceback",
         lambda case: ((case / "model" / "pytorch_model.bin").write_bytes(
             b"\x80\x04\x95\x1a\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system\x93\x8c\x0ctouch pwned\x85R."),
             trace(case / "model"))[1], outcome="either", keeps=lambda case: _not_there(case / "pwned")),
]

CASES = SAFETENSORS + GGUF + CONFIG + TOKENIZER + FILE_KINDS
