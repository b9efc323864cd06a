"""A JSON number of thousands of digits is valid JSON that Python refuses to convert (its int-conversion
limit, sys.get_int_max_str_digits(), 4,300 by default) with a bare ValueError. Every JSON file the program
reads from outside (a model's config.json, tokenizer_config.json, a shard index, a session file) turns that
into its own one sentence naming the file."""
from __future__ import annotations

import json
import sys

import pytest

from explorer.core.errors import ExplorerError
from explorer.core.loaders import open_checkpoint
from tests.core.tiny_checkpoints import write_hf_folder

DIGITS = sys.get_int_max_str_digits() + 1        # one past what Python converts


def _with_long_number(path, key: str) -> None:
    text = path.read_text(encoding="utf-8").rstrip()
    assert text.endswith("}")
    body = text[:-1].rstrip()
    path.write_text(f'{body}{"" if body.endswith("{") else ","} "{key}": {"7" * DIGITS}}}', encoding="utf-8")


def test_python_itself_refuses_such_a_number():
    with pytest.raises(ValueError):
        json.loads("7" * DIGITS)


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json"])
def test_a_model_file_with_a_number_of_thousands_of_digits_is_refused_naming_it(tmp_path, name):
    folder = tmp_path / "model"
    write_hf_folder(folder)
    if not (folder / name).exists():
        (folder / name).write_text("{}", encoding="utf-8")
    _with_long_number(folder / name, "vocab_size")
    with pytest.raises(ExplorerError) as raised:
        open_checkpoint(folder)
    message = str(raised.value)
    assert str(folder / name) in message and "digits" in message and "\n" not in message, message


def test_a_session_with_a_number_of_thousands_of_digits_is_refused_naming_it(tmp_path):
    from explorer.views.session_state import SessionState, load, save

    path = tmp_path / "session.json"
    save(path, SessionState(model="tiny", prompt="To be"))
    _with_long_number(path, "steps")
    with pytest.raises(ExplorerError) as raised:
        load(path)
    assert str(path) in str(raised.value) and "digits" in str(raised.value)


def test_a_safetensors_header_with_a_number_of_thousands_of_digits_is_refused_naming_it(tmp_path):
    import struct

    write_hf_folder(tmp_path / "model")
    path = tmp_path / "model" / "model.safetensors"
    header = f'{{"w": {{"dtype": "F32", "shape": [1], "data_offsets": [0, {"4" * DIGITS}]}}}}'.encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(4))
    with pytest.raises(ExplorerError) as raised:
        open_checkpoint(path.parent)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)
