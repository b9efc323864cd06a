"""The Hugging Face style config dict of a model folder, a config.json or a .gguf file, without its weights.

Read by the API's kv_table, the KV lab and the `kv` command: dimensions only (a GGUF file's header).
"""
from __future__ import annotations

from pathlib import Path

from explorer.core.errors import ModelLoadError
from explorer.core.loaders.json_file import read_json


def read_config(path_text: str) -> tuple[dict, str]:
    """The config dict of a model folder, config.json or .gguf file, and a name for it."""
    path = Path(path_text).expanduser()
    if not path.exists():
        raise ModelLoadError(f"{path_text} does not exist.")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(f"{path_text} is a folder without a config.json.")
        return read_json(path / "config.json"), path.name
    if path.suffix.lower() == ".gguf":
        return gguf_config(path), path.stem
    if path.suffix.lower() == ".json":
        return read_json(path), path.parent.name
    raise ModelLoadError(f"{path_text} is neither a model folder, a config.json nor a .gguf file.")


def gguf_config(path: Path) -> dict:
    """A GGUF file's dimensions as a config dict, from its header only (no tensor data)."""
    from explorer.core.loaders.gguf_config import dimensions_of
    from explorer.core.loaders.gguf_header import read_gguf_header

    return dimensions_of(read_gguf_header(path, keep_arrays="numeric"), str(path))
