"""What the catalog says of a pulled GGUF model is what its file holds: the quantisation the picker and
`explorer models` name ("Instruct, Q4_1") is the file's own general.file_type, "Instruct" is said only of a
model that carries a chat template, and the float32 copy a first load announces is 4 bytes for each weight
the file stores. Read with the gguf package (llama.cpp's own reader), not with the engine's loader.
"""
from __future__ import annotations

import gguf
import pytest

from explorer.core import store

GGUF_MODELS = ["smollm2-135m", "gemma3-270m"]


def _pulled(name: str):
    path = store.pulled_path(name)
    if path is None:
        pytest.skip(f"{name} is not pulled (python -m explorer pull {name})")
    return path


def _field(reader: gguf.GGUFReader, key: str):
    field = reader.fields.get(key)
    return None if field is None else field.parts[field.data[0]]


@pytest.mark.realmodel
@pytest.mark.parametrize("name", GGUF_MODELS)
def test_the_catalog_names_the_variant_and_the_copy_the_pulled_file_holds(name):
    reader = gguf.GGUFReader(str(_pulled(name)))
    entry = store.PULLABLE[name]
    quantisation = gguf.LlamaFileType(int(_field(reader, "general.file_type")[0])).name.removeprefix("MOSTLY_")
    parts = [part.strip() for part in entry.variant.split(",")]
    assert parts[-1] == quantisation, f"{name}: the catalog says {entry.variant!r}, the file is {quantisation}"
    chat = "tokenizer.chat_template" in reader.fields
    assert ("Instruct" in parts) == chat, (entry.variant, chat)
    weights = sum(int(tensor.n_elements) for tensor in reader.tensors)
    assert entry.first_load_bytes == 4 * weights
