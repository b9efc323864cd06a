"""The Hugging Face style config dict of a model folder, a config.json or a .gguf file, without its weights.

Read by the API's kv_table, the KV lab and the `kv` command: dimensions only (a GGUF file's header).
What the path is, is loaders.open_model's answer.
"""
from __future__ import annotations

from pathlib import Path

from explorer.core.loaders.json_file import read_json
from explorer.core.loaders.model_file import ModelFiles, open_model


def read_config(path_text: str | Path) -> tuple[dict, str]:
    """The config dict of a model folder, config.json or .gguf file, and a name for it."""
    model = open_model(path_text)
    return model_config(model), model.name


def model_config(model: ModelFiles) -> dict:
    """The config dict of an opened model path: its config file, or its GGUF header's dimensions."""
    if model.format == "gguf":
        return gguf_config(model.path)
    return read_json(model.config)         # dimensions only: custom code a config asks for never runs here


def gguf_config(path: Path) -> dict:
    """A GGUF file's dimensions as a config dict, from its header only (no tensor data)."""
    # the gguf package (about 40 modules) only for a .gguf: the CLI's --help imports this module
    from explorer.core.loaders.gguf_config import dimensions_of
    from explorer.core.loaders.gguf_header import read_gguf_header

    return dimensions_of(read_gguf_header(path, keep_arrays="numeric"), str(path))
