"""Reading an untrusted JSON file (config.json, tokenizer_config.json, an index): bounded, one sentence on failure.

A config is small; a file far larger, or one nested so deeply that the parser would recurse
past Python's limit, is refused before or instead of a traceback. Numpy- and torch-free.
"""
from __future__ import annotations

import json
from pathlib import Path

from explorer.core.errors import ModelLoadError

MAX_JSON_BYTES = 64 << 20      # a sharded index of a very large model is ~1 MiB; a config a few KiB


def read_json(path: Path, what: str = "model's JSON file") -> dict:
    """A JSON object from a file, or ModelLoadError naming the file and the problem."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise ModelLoadError(f"{path} is {size:,} bytes, far more than any {what} holds; it was not read.")
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelLoadError(f"{path} does not exist.") from None
    except RecursionError:
        raise ModelLoadError(f"{path} is not valid JSON (it is nested too deeply to be a {what}).") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelLoadError(f"{path} is not valid JSON ({error}).") from None
    if not isinstance(value, dict):
        raise ModelLoadError(f"{path} does not hold a JSON object.")
    return value
