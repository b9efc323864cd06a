"""What a model is, read from its headers alone: family, attention variant, sizes, parameters.

Listing models must not load gigabytes, so parameters are counted from the
shapes in the safetensors headers or the GGUF tensor table, and whether the
engine can run a model is asked of `ModelConfig.from_hf` (the engine's own rule).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from explorer.core.config import ModelConfig, attention_kind
from explorer.core.errors import ExplorerError, UnsupportedModelError
from explorer.core.families import FAMILIES, gguf_row, text_config
from explorer.core.loaders.hf_folder import read_config, read_license, weight_files
from explorer.core.loaders.model_file import open_model
from explorer.core.loaders.safetensors_header import read_safetensors_header


@dataclass(frozen=True)
class Summary:
    family: str  # model_type, e.g. "llama", "gemma3_text", "bert"
    attention: str  # "mha" | "mqa" | "gqa" | "mla"
    layers: int
    heads: int
    kv_heads: int
    params: int
    size_bytes: int
    format: str  # "hf" | "gguf"
    license: str | None = None


def attention_variant(config: dict) -> str:
    """MLA when keys and values come from a latent (kv_lora_rank); else MHA, MQA or GQA by the KV head count."""
    return attention_kind(*head_counts(config), latent=bool(config.get("kv_lora_rank")))


def head_counts(config: dict) -> tuple[int, int]:
    """(N_Q, N_KV) of a config.json dict; a key it leaves out takes what its family's row says transformers
    assumes (families.ModelFamily.defaults: Gemma 1's 16 K/V heads), and N_KV without one is N_Q."""
    row = FAMILIES.get(str(config.get("model_type") or ""))
    config = {**(row.defaults if row else {}), **config}
    heads = int(config.get("num_attention_heads") or config.get("n_head") or 0)
    kv_heads = config.get("num_key_value_heads")
    if kv_heads is None:
        kv_heads = 1 if config.get("multi_query") else heads
    return heads, int(kv_heads)


def size_on_disk(path: Path) -> int:
    """Bytes of a file, or of every file under a folder (following the HF cache's symlinks to blobs)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _check_supported(config: dict) -> None:
    ModelConfig.from_hf(config)


def _hf_summary(folder: Path, config_path: Path) -> Summary:
    config = text_config(read_config(config_path))
    files = weight_files(folder)
    if not (folder / "tokenizer.json").is_file():
        raise UnsupportedModelError(f"{folder} has no tokenizer.json.")
    _check_supported(config)
    params = 0
    for file in files:
        for name, entry in read_safetensors_header(file).items():
            if name != "__metadata__" and entry["dtype"] in ("F64", "F32", "F16", "BF16"):
                params += _product(entry["shape"])
    heads, kv_heads = head_counts(config)
    layers = int(config.get("num_hidden_layers") or config.get("n_layer") or 0)
    return Summary(family=str(config.get("model_type", "?")), attention=attention_variant(config), layers=layers,
                   heads=heads, kv_heads=kv_heads, params=params, size_bytes=size_on_disk(folder), format="hf",
                   license=read_license(folder))


def _gguf_summary(path: Path) -> Summary:
    # the gguf package (about 40 modules) only for a .gguf: the model list is built at the app's and CLI's start
    from explorer.core.loaders.gguf_header import read_gguf_header, tensor_bytes

    header = read_gguf_header(path)
    for info in header.tensors:
        tensor_bytes(info, str(path))
    row = gguf_row(header.architecture)
    if row is None:
        raise UnsupportedModelError(f"GGUF architecture {header.architecture!r} is not supported.")
    config = row.gguf_reader(header, str(path))
    _check_supported(config)
    heads, kv_heads = head_counts(config)
    license_name = header.metadata.get("general.license")
    return Summary(family=config["model_type"], attention=attention_variant(config),
                   layers=config["num_hidden_layers"], heads=heads, kv_heads=kv_heads,
                   params=sum(t.n_elements for t in header.tensors), size_bytes=header.file_size, format="gguf",
                   license=str(license_name) if license_name else None)


def _product(shape) -> int:
    count = 1
    for dim in shape:
        count *= int(dim)
    return count


def summarize(path: Path) -> tuple[Summary | None, str | None]:
    """(summary, None) for a model the explorer can open, or (None, one-sentence reason) for one it cannot."""
    try:
        model = open_model(path)
        if model.format == "gguf":
            return _gguf_summary(model.path), None
        return _hf_summary(model.path, model.config), None
    except ExplorerError as error:
        return None, str(error)
    except OSError as error:
        return None, f"{path} cannot be read ({error.strerror or error})."
