"""Reading an untrusted JSON file (config.json, tokenizer_config.json, an index): bounded, one sentence on failure.

A config is small; a file far larger, or one nested so deeply that the parser would recurse
past Python's limit, is refused before or instead of a traceback. Numpy- and torch-free.
"""
from __future__ import annotations

import json
from pathlib import Path

from explorer.core.errors import ModelLoadError
from explorer.core.loaders.model_file import read_bytes

MAX_JSON_BYTES = 64 << 20      # a sharded index of a very large model is ~1 MiB; a config a few KiB


def read_json(path: Path, what: str = "model's JSON file") -> dict:
    """A JSON object from a file, or ModelLoadError naming the file and the problem."""
    raw = read_bytes(path, MAX_JSON_BYTES, what)
    try:
        value = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ModelLoadError(f"{path} is not valid JSON (it is nested too deeply to be a {what}).") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelLoadError(f"{path} is not valid JSON ({error}).") from None
    except ValueError:          # a number of thousands of digits, past Python's int-conversion limit
        raise ModelLoadError(f"{path} holds a number of more digits than Python reads (over 4,300); "
                             f"it cannot be a {what}.") from None
    if not isinstance(value, dict):
        raise ModelLoadError(f"{path} does not hold a JSON object.")
    return value
