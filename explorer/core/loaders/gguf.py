"""Open a single .gguf file as Hugging Face-style config + float32 tensors + tokenizer.

GGUF (llama.cpp) stores metadata under `<arch>.*` keys and weights under short
names (`blk.3.attn_q.weight`), often quantized. We map both back to what a
transformers checkpoint would hold, so the engine builds GGUF and safetensors
models with the same code:
- the config by the GGUF reader its family's row holds (gguf_readers.py), checked (`gguf_config.py`);
- tensor names from the declarative name table its family's row holds (weight_names.py);
- tensors dequantized with `gguf.quants.dequantize` into float32;
- llama: llama.cpp's converter permutes W^Q and W^K rows (HF's rotate-half RoPE
  -> GGML's interleaved RoPE); we undo that permutation (the family row's gguf_permuted_qk);
- Gemma 1, 2 and 3: llama.cpp's converter stores every RMSNorm weight as (1 + w)
  because Gemma's norm computes x * (1 + w); we subtract 1 to get the HF weight back
  (the family row's gguf_norm_plus_one).
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import gguf
import numpy as np
import torch
from gguf.constants import GGMLQuantizationType

from explorer.core import store
from explorer.core.errors import NonFiniteError, UnsupportedModelError
from explorer.core.families import gguf_row
from explorer.core.loaders import gguf_cache, gguf_copy, gguf_tokenizer
from explorer.core.loaders.gguf_config import config_of
from explorer.core.loaders.gguf_header import GGUFHeader, TensorInfo, read_gguf_header, tensor_bytes
from explorer.core.loaders.gguf_tokenizer import BUILDING, tokenizer_from_gguf
from explorer.core.loaders.hf import MAX_TOKENIZER_BYTES, bounded_tokenizer, check_pieces
from explorer.core.loaders.load_progress import READY_AT, TOKENIZER_SHARE, before_a_copy, phase
from explorer.core.loaders.model_file import read_bytes
from explorer.core.tokens import TextTokenizer
from explorer.core.weights import check_finite

_BLOCK = re.compile(r"^blk\.(\d+)\.")


def hf_name(arch: str, gguf_name: str) -> str | None:
    """HF state_dict name of a GGUF tensor, by the table its family's row holds (families.ModelFamily.gguf_weights),
    or None if the table does not know it (or no row builds `arch`)."""
    match = _BLOCK.match(gguf_name)
    key = _BLOCK.sub("blk.{i}.", gguf_name) if match else gguf_name
    row = gguf_row(arch)
    target = (row.gguf_weights or {}).get(key) if row else None
    if target is None:
        return None
    return target.format(i=match.group(1)) if match else target


def unpermute_rows(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """Undo convert_hf_to_gguf's `permute`: rows (h, d/2, 2) back to HF's (h, 2, d/2) per head."""
    rows = weight.shape[0]
    return (weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:])
            .transpose(1, 2).reshape(weight.shape))


def permute_rows(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """convert_hf_to_gguf's `permute` (HF rotate-half row order -> GGML interleaved pairs)."""
    rows = weight.shape[0]
    return (weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:])
            .transpose(1, 2).reshape(weight.shape))


CHUNK_VALUES = 1 << 22      # values dequantized between two calls of `between`: a Cancel of a load is seen within
                            # a tensor (Gemma 3's 262,144-row token embedding took up to 20 s in one piece)


def _dequantize(data: np.ndarray, info: TensorInfo, source: str, between=None) -> torch.Tensor:
    """float32 values of one tensor, from its bytes in the memory-mapped file: its rows a chunk at a time (quants
    are blocks within a row), `between(share done)` called between two chunks (a progress, which may cancel)."""
    qtype = GGMLQuantizationType(info.type_id)
    width = int(info.shape[-1])
    n_rows = int(np.prod(info.shape[:-1], dtype=np.int64))
    rows = data[info.offset:info.offset + tensor_bytes(info, source)].reshape(n_rows, -1)
    values = np.empty((n_rows, width), dtype=np.float32)
    step = max(1, CHUNK_VALUES // max(1, width))
    try:
        for start in range(0, n_rows, step):
            if start and between is not None:
                between(start / n_rows)
            values[start:start + step] = gguf.quants.dequantize(rows[start:start + step], qtype)
    except NotImplementedError:
        raise UnsupportedModelError(
            f"{source}: tensor {info.name} uses quantization type {qtype.name}, which cannot be dequantized.") from None
    return torch.from_numpy(values.reshape(info.shape))


def _fix_convention(arch: str, name: str, weight: torch.Tensor, config: dict) -> torch.Tensor:
    row = gguf_row(arch)
    if row.gguf_permuted_qk and name.endswith("self_attn.q_proj.weight"):
        return unpermute_rows(weight, config["num_attention_heads"])
    if row.gguf_permuted_qk and name.endswith("self_attn.k_proj.weight"):
        return unpermute_rows(weight, config["num_key_value_heads"])
    if name.endswith("norm.weight") and row.gguf_norm_plus_one:     # Gemma: stored as 1 + w
        return weight - 1.0
    return weight


def read_tensors(path: Path, header: GGUFHeader, config: dict, progress=None) -> dict[str, torch.Tensor]:
    """Every tensor of the file, dequantized to float32, under its HF name and convention. `progress(share,
    text)` gets the share of the file's values dequantized: counted by tensors, Gemma 3's token embedding (62 %
    of its values, ~13 s) sat at "0%" as one tensor of 236."""
    source, arch = str(path), header.architecture
    data = np.memmap(path, mode="r", dtype=np.uint8)
    sizes = [int(np.prod(info.shape, dtype=np.int64)) for info in header.tensors]
    tensors, total, done = {}, max(1, sum(sizes)), 0
    for info, size in zip(header.tensors, sizes):
        name = hf_name(arch, info.name)
        if name is None:
            raise UnsupportedModelError(
                f"{source} holds the tensor {info.name}, which the {arch} loader does not know.")
        between = None if progress is None else \
            (lambda share, done=done, size=size, info=info:
             progress((done + share * size) / total, f"dequantizing {info.name}"))
        tensors[name] = _fix_convention(arch, name, _dequantize(data, info, source, between), config)
        done += size
        if progress is not None:
            progress(done / total, f"dequantizing {info.name}")
    return tensors


READ_SHARE = 0.6        # of the bar, dequantizing when a float32 copy is written after it: Gemma 3 270M's first
                        # open (OMP_NUM_THREADS=1) took 15.4 s to dequantize, 8.4 s to write the copy, ~1.4 s to build


def cached_or_read_tensors(path: Path, header: GGUFHeader, config: dict, progress=None,
                           start: float = 0.0) -> dict[str, torch.Tensor]:
    """The tensors from the float32 copy of an earlier load when it is fresh (see gguf_cache), else
    dequantized now, and the copy written for next time; the bar drawn from `start` (the tokenizer's before).
    It stops short of full (READY_AT): the model is still to be made, and a full bar said the work was done
    for 20 s (drive20 m2)."""
    expected = {hf_name(header.architecture, info.name): tuple(int(d) for d in info.shape) for info in header.tensors}
    tensors = gguf_cache.load(path, expected)
    if tensors is not None and not _finite(tensors):
        tensors = None                   # a damaged copy (the .gguf's own weights are checked as ever): made again
    if tensors is not None:
        if progress is not None:
            progress(READY_AT, "mapped the dequantized copy")
        return tensors
    copy = gguf_cache.cache_path(path)
    read_end = READ_SHARE if copy is not None else READY_AT
    tensors = read_tensors(path, header, config, phase(progress, start, read_end))
    if copy is not None:
        n_bytes = sum(t.numel() for t in tensors.values()) * 4
        before_a_copy(progress, read_end, n_bytes, f"writing a {n_bytes / 1e9:.1f} GB float32 copy for next time")
        gguf_cache.save(path, tensors, phase(progress, read_end, READY_AT))
    return tensors


def _finite(tensors: dict[str, torch.Tensor]) -> bool:
    """Whether the float32 copy's tensors are all finite (weights.check_finite's sums: ~18 ms for SmolLM2). A NaN in
    the copy refused the good model at every load, and the sentence blamed the .gguf (boundary27)."""
    try:
        check_finite(tensors, "the float32 copy")
    except NonFiniteError:
        return False
    return True


def tokenizer_cache_path(path: Path) -> Path | None:
    """`<file>.gguf.tokenizer.json` beside the dequantized copy: only where that copy may be (gguf_cache)."""
    copy = gguf_cache.cache_path(path)
    return None if copy is None else copy.with_name(Path(path).resolve().name + store.TOKENIZER_COPY_SUFFIX)


def _tokenizer_fingerprint(path: Path) -> dict[str, str]:
    """The GGUF's size and mtime, and the tokenizer builder's own source: a changed builder builds again."""
    try:
        builder = hashlib.sha256(Path(gguf_tokenizer.__file__).read_bytes()).hexdigest()[:16]
    except OSError:
        builder = "unknown"
    return {**gguf_cache.fingerprint(path), "builder": builder}


def _tokenizer_metadata(path: Path) -> dict:
    """The file's tokenizer.ggml.* metadata, its vocabulary and merges decoded."""
    header = read_gguf_header(path, keep_arrays=True)
    return {key: value for key, value in header.metadata.items() if key.startswith("tokenizer.ggml.")}



def cached_or_built_tokenizer(path: Path, metadata, source: str, progress=None) -> TextTokenizer:
    """The tokenizer saved by an earlier load when it is fresh, else built from the metadata (Gemma 3's 262k
    pieces: ~6 s) and saved for next time. `metadata()` gives the tokenizer metadata, read only when the
    tokenizer is built. `progress(share, text)` is called between the pieces of the work, so that a Cancel
    (progress raising) is seen within a build, and right after a piece the library does in one call."""
    report = progress or (lambda share, text: None)
    cache = tokenizer_cache_path(path)
    if cache is not None and cache.is_file():
        report(0.0, "reading the tokenizer saved by an earlier load")
        saved = _saved_tokenizer(cache, path, report)
        if saved is not None:
            report(1.0, "read the saved tokenizer")
            return saved
    report(0.0, BUILDING)
    meta = metadata()
    report(0.05, BUILDING)
    tokenizer = tokenizer_from_gguf(meta, source, phase(report, 0.05, 0.85))
    if cache is not None:
        report(0.85, "saving the tokenizer for next time")
        _save_tokenizer(cache, path, tokenizer, meta)
    report(1.0, "built the tokenizer")
    return tokenizer


def _saved_tokenizer(cache: Path, path: Path, progress=None) -> TextTokenizer | None:
    """The tokenizer an earlier load saved, held to the caps of a tokenizer.json (its size, entries and
    merges counted before it is built, its pieces after); None when it is stale, damaged or past a cap, so
    that a tampered file in the store costs one build from the GGUF, never a bomb."""
    try:
        # The saved tokenizer is held as a JSON string inside the file: escaping at most doubles its size.
        saved = json.loads(read_bytes(cache, 2 * MAX_TOKENIZER_BYTES, "saved tokenizer"))
        if saved.get("fingerprint") != _tokenizer_fingerprint(path):
            return None
        tokenizer = TextTokenizer(bounded_tokenizer(saved["tokenizer"].encode("utf-8"), cache, progress),
                                  add_bos=saved["add_bos"], bos_id=saved["bos_id"], eos_id=saved["eos_id"])
        check_pieces(tokenizer, cache)
        return tokenizer
    except Exception:       # unreadable, damaged or past a cap (a ModelLoadError): built again from the GGUF
        return None


def _save_tokenizer(cache: Path, path: Path, tokenizer: TextTokenizer, meta: dict) -> None:
    saved = {"fingerprint": _tokenizer_fingerprint(path), "add_bos": tokenizer.add_bos,
             "bos_id": meta.get("tokenizer.ggml.bos_token_id"), "eos_id": meta.get("tokenizer.ggml.eos_token_id"),
             "tokenizer": tokenizer.tokenizer.to_str()}
    gguf_cache.save_tokenizer(cache, saved)             # atomic; a full disk only loses the speed-up


def read_gguf(path: str | Path, progress=None) -> tuple[dict, dict[str, torch.Tensor], object, str | None]:
    """(hf_config, tensors, TextTokenizer, license) of a .gguf file; errors name the file.

    The header is read by our strict reader (bounds and quantization types checked before any
    data is touched); tensor bytes are memory-mapped and dequantized by `gguf.quants`.
    """
    try:
        return _read_gguf(Path(path), progress)
    finally:
        gguf_copy.drop(Path(path))       # a copy read ahead for this load (see gguf_copy) is not kept past it


def _read_gguf(path: Path, progress) -> tuple[dict, dict[str, torch.Tensor], object, str | None]:
    source = str(path)
    # Strings (the vocabulary) are decoded only if the tokenizer must be built from them (see below).
    header = read_gguf_header(path, keep_arrays="numeric")
    for info in header.tensors:
        tensor_bytes(info, source)  # raises UnsupportedModelError naming an unknown quantization type
    config = config_of(header, source)
    tokenizer = cached_or_built_tokenizer(path, lambda: _tokenizer_metadata(path), source,
                                          phase(progress, 0.0, TOKENIZER_SHARE))
    tensors = cached_or_read_tensors(path, header, config, progress, TOKENIZER_SHARE)
    license_name = header.metadata.get("general.license")
    return config, tensors, tokenizer, (str(license_name) if license_name else None)
