"""A GGUF file's metadata as a Hugging Face style config dict, checked.

`config_of(header)` builds the full config the engine runs, by the reader its family's row holds
(families.ModelFamily.gguf_reader, from gguf_readers: llama, gemma, gemma2, gemma3, phi3, the architectures
whose weights the GGUF loader maps), and checks it against the config schema, naming each key as the file
names it; `dimensions_of(header)` gives the cache-deciding part of any known architecture, which is all the
KV table needs. Reads a parsed header only: no torch, no tensor data.
"""
from __future__ import annotations

from explorer.core.config_schema import check_config, check_field
from explorer.core.errors import ExplorerError, ModelLoadError, UnsupportedModelError
from explorer.core.families import gguf_named, gguf_row, model_type_of_gguf, supported_gguf
from explorer.core.gguf_readers import HF_KEYS, LOCAL_KEYS, OPTIONAL_KEYS, ROTARY_KEYS
from explorer.core.loaders.gguf_header import GGUFHeader


def gguf_names(header: GGUFHeader, source: str) -> dict[str, str]:
    """config.json key -> how the sentence names it in this file: '<file>: <arch>.<GGUF key>'."""
    keys = {**{hf: key for hf, (key, _) in HF_KEYS.items()}, **OPTIONAL_KEYS, **LOCAL_KEYS, **ROTARY_KEYS}
    return {hf: f"{source}: {header.architecture}.{key}" for hf, key in keys.items()}


def config_of(header: GGUFHeader, source: str) -> dict:
    """The full config.json dict the engine builds a GGUF model from (an architecture whose row has a GGUF reader)."""
    row = gguf_row(header.architecture)
    if row is None:
        raise UnsupportedModelError(
            f"{source} holds the architecture {header.architecture!r}; GGUF files of {supported_gguf()} are supported.")
    config = row.gguf_reader(header, source)
    check_config(config, gguf_names(header, source))        # the rules between fields, named as the file names them
    return config


def dimensions_of(header: GGUFHeader, source: str) -> dict:
    """The config dict of any architecture a family row names (families.ModelFamily.gguf), as far as its
    metadata holds it (the KV table's input).

    The full config comes first (what the engine would run); an architecture the loader does not build,
    or a detail only the weights need (such as Llama 3's rope_freqs), falls back to the keys alone.
    """
    arch = header.architecture
    model_type = model_type_of_gguf(arch)
    if model_type is None:
        raise ModelLoadError(f"{source} has GGUF architecture {arch!r}, which the KV table does not know.")
    row = gguf_row(arch)
    if row is not None:
        try:
            return row.gguf_reader(header, source)
        except ExplorerError:
            pass
    config = {"model_type": model_type}
    for hf, gguf_key in [*((k, key) for k, (key, _) in HF_KEYS.items()), *OPTIONAL_KEYS.items()]:
        value = header.get(gguf_key)
        if isinstance(value, list):
            value = max(value) if value and all(isinstance(v, (int, float)) for v in value) else None
        if value is not None and not isinstance(value, dict):
            check_field(hf, value, {hf: f"{source}: {arch}.{gguf_key}"})
            config[hf] = value
    named = gguf_named(arch)
    if named.gguf_dimensions is not None:             # the architecture's own keys (Gemma 3's windows, MLA's sizes)
        named.gguf_dimensions(header, config, source)
    return config
