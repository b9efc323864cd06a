"""Open a Hugging Face model folder: config.json, *.safetensors (single or sharded), tokenizer.json.

Every file is untrusted. The config may not ask for custom code; safetensors
headers are checked (JSON, known dtypes, offsets inside the file and consistent
with each shape) before a byte of data is read, then memory-mapped; pickle
checkpoints are refused, never unpickled.
"""
from __future__ import annotations

import mmap
import re
import struct
from pathlib import Path

import tokenizers
import torch

from explorer.core.errors import ModelLoadError
from explorer.core.loaders.gguf_header import MAX_PIECE_BYTES
from explorer.core.loaders.hf_folder import (  # noqa: F401
    CONVERT_HINT,
    PICKLE_SUFFIXES,
    read_config,
    read_license,
    refuse_custom_code,
    weight_files,
)
from explorer.core.loaders.json_file import read_json
from explorer.core.loaders.load_progress import TOKENIZER_SHARE, Progress, before_a_build, phase
from explorer.core.loaders.model_file import open_regular, read_bytes
from explorer.core.loaders.safetensors_header import read_safetensors_header
from explorer.core.tokens import TextTokenizer, first_line


def read_safetensors(files: list[Path], progress=None) -> dict[str, torch.Tensor]:
    """All tensors of the given files, after checking each header; duplicate names are refused.

    Each file is memory-mapped once (copy-on-write, so nothing can write to it) and its tensors
    are views of that one mapping: the weights are the file's pages in the page cache, not a
    second copy in RAM, and tensors that lie one after another in the file stay adjacent
    (stacked.stack_rows then stacks them without copying).
    """
    tensors: dict[str, torch.Tensor] = {}
    for number, path in enumerate(files):
        header = read_safetensors_header(path)
        try:
            for name, tensor in mapped_tensors(path, header).items():
                if name in tensors:
                    raise ModelLoadError(f"{path} repeats the tensor {name} found in another shard.")
                tensors[name] = tensor
        except (RuntimeError, OSError, ValueError) as error:
            raise ModelLoadError(f"{path} is corrupt and cannot be read ({error}).") from None
        if progress is not None:
            progress((number + 1) / len(files), f"read {path.name}")
    return tensors


TORCH_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
                "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
                "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}


def mapped_tensors(path: Path, header: dict) -> dict[str, torch.Tensor]:
    """The tensors of a checked safetensors file as views of one copy-on-write mapping of it."""
    entries = {name: entry for name, entry in header.items() if name != "__metadata__"}
    if not entries:
        return {}
    with open_regular(path) as handle:
        data_start = 8 + struct.unpack("<Q", handle.read(8))[0]
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
    file_bytes = torch.frombuffer(mapping, dtype=torch.uint8)             # one storage for the whole file
    out = {}
    for name, entry in entries.items():
        start, end = (data_start + int(offset) for offset in entry["data_offsets"])
        dtype, shape = TORCH_DTYPES[entry["dtype"]], [int(dim) for dim in entry["shape"]]
        raw = file_bytes[start:end]
        if start % max(1, dtype.itemsize):                                # unaligned: the one case that copies
            raw = raw.clone()
        out[name] = raw.view(dtype).view(shape)
    return out


MAX_TOKENIZER_BYTES = 256 << 20     # Gemma 3's 262k-token tokenizer.json is ~33 MB
MAX_TOKENIZER_STRINGS = 1 << 20     # Llama 3 has 280k merges, Gemma 3 (converted from SentencePiece) about 515k
                                    # and 262k pieces: the bound of a GGUF vocabulary's arrays (gguf_header)


READING = "reading the tokenizer from tokenizer.json"


def read_tokenizer(folder: Path, config: dict, progress=None) -> TextTokenizer:
    """The folder's tokenizer.json (with its tokenizer_config.json), checked as any file is. `progress(share,
    text)` is called before and right after the library's one build call (a 33 MB tokenizer.json takes it
    seconds), so that a Cancel (progress raising) is seen as soon as the build is done."""
    report = progress or (lambda share, text: None)
    path = folder / "tokenizer.json"
    if not path.exists():
        raise ModelLoadError(
            f"{folder} has no tokenizer.json; the explorer needs the fast-tokenizer file next to the weights.")
    report(0.0, READING)
    # Read here and handed over as text: the library would open any path (a FIFO) and cannot take a
    # folder name that is not UTF-8.
    raw = read_bytes(path, MAX_TOKENIZER_BYTES, "tokenizer file")
    report(0.05, READING)
    tokenizer = bounded_tokenizer(raw, path, lambda share, text: report(0.05, text))
    report(0.9, "checking the tokenizer's settings and pieces")
    settings = read_json(folder / "tokenizer_config.json") if (folder / "tokenizer_config.json").exists() else {}
    refuse_custom_code(settings, folder / "tokenizer_config.json")
    text_tokenizer = TextTokenizer(
        tokenizer,
        add_bos=bool(settings.get("add_bos_token", False)),
        bos_id=_int_or_none(config.get("bos_token_id")),
        eos_id=_int_or_none(config.get("eos_token_id")),
    )
    check_pieces(text_tokenizer, path)
    report(1.0, "read the tokenizer")
    return text_tokenizer


def bounded_tokenizer(raw: bytes, path: Path, progress: Progress | None = None) -> tokenizers.Tokenizer:
    """The tokenizer a tokenizer.json's bytes describe (a file's, or one saved beside a GGUF copy), its
    merges and entries counted on the bytes before anything is built; any failure one sentence naming `path`.
    A build that holds the window is said first, on `progress` (load_progress.before_a_build). The caller
    checks its pieces (check_pieces) once it is wrapped."""
    before_a_build(progress, 0.0, _check_counts(raw, path))
    try:
        return tokenizers.Tokenizer.from_str(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ModelLoadError(f"{path} is not a valid tokenizer file (it is not UTF-8 text).") from None
    except BaseException as error:  # noqa: B036 -- tokenizers raises bare Exceptions, and Rust panics as BaseException
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        raise ModelLoadError(f"{path} is not a valid tokenizer file ({_plain(first_line(error))}).") from None


# serde's words for a JSON object that fits none of a tokenizer part's kinds, and the JSON key of each part
_UNTAGGED = re.compile(r"data did not match any variant of untagged enum (\w+)")
_PARTS = {"Model": "model", "Merge": "model.merges", "PreTokenizer": "pre_tokenizer", "Normalizer": "normalizer",
          "Decoder": "decoder", "PostProcessor": "post_processor", "Processor": "post_processor"}


def _plain(message: str) -> str:
    """The tokenizers library's message with serde's "untagged enum ModelUntagged" said as the part of the
    file it is about (boundary27: library jargon in a sentence for the person)."""
    def said(match: re.Match) -> str:
        part = next((key for name, key in _PARTS.items() if match[1].startswith(name)), None)
        return f"its {part} is of no kind the tokenizers library reads" if part else match[0]
    return _UNTAGGED.sub(said, message)


def _check_counts(raw: bytes, path: Path) -> int:
    """Merges and vocabulary entries are bounded as a GGUF vocabulary's are, counted on the bytes before
    anything is built (milliseconds): the library took 13 s and 2.5 GB to build 5 million merges from 57 MB.
    Each merge ("a b", or ["a", "b"]) holds one quote-comma and each entry of a vocabulary object
    ("piece": id) one quote-colon; the few keys of the file's structure add a handful. The merges counted."""
    counts = []
    for marker, what in ((b'",', "merges"), (b'":', "vocabulary entries")):
        counts.append(raw.count(marker))
        if counts[-1] > MAX_TOKENIZER_STRINGS:
            raise ModelLoadError(f"{path} holds about {counts[-1]:,} {what}, more than the "
                                 f"{MAX_TOKENIZER_STRINGS:,} of any tokenizer; it was not built.")
    return counts[0]


def check_pieces(tokenizer: TextTokenizer, path: Path) -> None:
    """A vocabulary piece (a merge's two sides are pieces too) is bounded as a GGUF vocabulary's is: a longer
    one would stretch the prompt's length bound (tokens.TextTokenizer._check_length) past any use."""
    longest = tokenizer.longest_piece()[1]
    if longest > MAX_PIECE_BYTES:
        raise ModelLoadError(f"{path} holds a vocabulary piece of {longest:,} bytes, longer than the "
                             f"{MAX_PIECE_BYTES:,} of any token; it was not used.")


def _int_or_none(value) -> int | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return int(value) if isinstance(value, int) else None


def read_hf_folder(folder: str | Path, config_path: Path, progress=None):
    """(hf_config, tensors, TextTokenizer, license) of a Hugging Face folder, its config read from
    `config_path` (loaders.open_model's ModelFiles.config); errors name the file. The bar: the tokenizer
    first (TOKENIZER_SHARE, as a GGUF's), then the weights to its end (runtime.load_model holds it at READY_AT)."""
    folder = Path(folder)
    config = read_config(Path(config_path))
    files = weight_files(folder)
    tokenizer = read_tokenizer(folder, config, phase(progress, 0.0, TOKENIZER_SHARE))
    tensors = read_safetensors(files, phase(progress, TOKENIZER_SHARE, 1.0))
    return config, tensors, tokenizer, read_license(folder)
