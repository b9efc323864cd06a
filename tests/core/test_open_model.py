"""One door for model paths: loaders.open_model says once what a path is (format, folder or file, config
file, name), and the API, the CLI and the store's summaries give the same answer for a folder, its
config.json, a .gguf file, a FIFO, a missing path, a folder without config.json and an unknown suffix.

The expected descriptions and sentences are written here from what each path is, not read from the code."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import explorer
from explorer import cli
from explorer.core.errors import ExplorerError
from explorer.core.loaders import ModelFiles, open_model
from explorer.core.model_summary import summarize
from tests.malformed_corpus import good_folder, llama_gguf


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, Path]:
    return model_paths(tmp_path_factory.mktemp("door"))


def model_paths(root: Path) -> dict[str, Path]:
    """One path of each kind under `root`: a tiny llama folder, its config.json, its .gguf, and the bad ones."""
    folder = good_folder(root / "tiny")
    (root / "empty").mkdir()
    (root / "notes.txt").write_text("not a model")
    lone = root / "lone"                                         # weights and a tokenizer, no config.json
    lone.mkdir()
    shutil.copyfile(folder / "model.safetensors", lone / "model.safetensors")
    (lone / "tokenizer.json").write_text("{}")
    os.mkfifo(root / "weights.gguf")
    gguf = llama_gguf(folder, root, "tiny.gguf")
    pulled, two = root / "pulled", root / "two"                 # a pulled GGUF model's store folder; two files
    for where, names in ((pulled, ["tiny.gguf"]), (two, ["a.gguf", "b.gguf"])):
        where.mkdir()
        (where / "pulled.json").write_text("{}")
        for name in names:
            shutil.copyfile(gguf, where / name)
    return {"folder": folder, "config.json": folder / "config.json", "gguf": gguf, "gguf folder": pulled,
            "fifo": root / "weights.gguf", "missing": root / "missing", "empty folder": root / "empty",
            "lone safetensors": lone / "model.safetensors", "lone tokenizer": lone / "tokenizer.json",
            "unknown suffix": root / "notes.txt", "two gguf folder": two}


def described(paths: dict[str, Path], case: str) -> ModelFiles:
    """What each good path is: the folder and its config.json are the same HF folder; a .gguf is itself."""
    folder, gguf = paths["folder"], paths["gguf"]
    if case == "gguf":
        return ModelFiles(format="gguf", path=gguf, config=gguf, name="tiny")
    if case == "gguf folder":                           # the one .gguf it holds
        inside = paths[case] / gguf.name
        return ModelFiles(format="gguf", path=inside, config=inside, name="tiny")
    return ModelFiles(format="hf", path=folder, config=folder / "config.json", name="tiny")


def sentence(paths: dict[str, Path], case: str) -> str:
    path = paths[case]
    return {"fifo": f"{path} is a named pipe (FIFO), not a regular file; it was not opened.",
            "missing": f"{path} does not exist, and is no known model name (python -m explorer models lists them).",
            "empty folder": f"{path} has no config.json, so it is not a Hugging Face model folder.",
            # the file chosen is named, not only its folder (drive29)
            "lone safetensors": f"{path} needs a config.json beside it: a .safetensors file holds only weights.",
            "lone tokenizer": f"{path} needs a config.json beside it: tokenizer.json is no model.",
            "unknown suffix": f"{path} is neither a model folder, a config.json nor a .gguf file.",
            "two gguf folder": f"{path} holds 2 .gguf files and no config.json; open one of the files."}[case]


GOOD = ("folder", "config.json", "gguf", "gguf folder")
BAD = ("fifo", "missing", "empty folder", "unknown suffix", "two gguf folder", "lone safetensors", "lone tokenizer")


def cli_run(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", GOOD)
def test_the_door_describes_each_model_path(paths, case):
    assert open_model(paths[case]) == described(paths, case)
    assert open_model(str(paths[case])) == described(paths, case)


@pytest.mark.parametrize("case", GOOD)
def test_api_cli_and_summary_agree_on_a_model_path(paths, capsys, case):
    expected = described(paths, case)
    model = explorer.load(paths[case])
    assert model.loaded.name == expected.name and model.loaded.path == expected.path
    assert model.info.n_layers == 2                      # tiny_checkpoints' llama: two layers, in both formats
    table = explorer.kv_table(paths[case], tokens=16)
    assert table == explorer.kv_table(paths["folder"], tokens=16)     # the same dimensions from each door
    code, out, _ = cli_run(capsys, "kv", "--model", str(paths[case]), "--tokens", "16", "--json")
    assert code == 0 and json.loads(out) == table
    summary, reason = summarize(paths[case])
    assert reason is None and summary.format == expected.format and summary.layers == 2


@pytest.mark.parametrize("case", BAD)
def test_a_bad_path_is_the_same_sentence_from_the_api_and_the_cli(paths, capsys, case):
    said = sentence(paths, case)
    for call in (explorer.load, explorer.kv_table):
        with pytest.raises(ExplorerError) as raised:
            call(paths[case])
        assert str(raised.value) == said
    for command in (["kv"], ["heads", "--ids", "1,2"]):
        code, out, err = cli_run(capsys, *command, "--model", str(paths[case]))
        assert (code, out, err) == (2, "", f"error: {said}\n")


@pytest.mark.parametrize("case", ("fifo", "empty folder", "unknown suffix"))
def test_the_store_summary_gives_the_door_sentence(paths, case):
    assert summarize(paths[case]) == (None, sentence(paths, case))


def test_the_door_names_a_missing_path_itself(paths):
    with pytest.raises(ExplorerError, match=r"^.*missing does not exist\.$"):
        open_model(paths["missing"])
