"""The good tiny Llama every boundary case spoils, written once, and a normal small run's peak memory."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.boundary.harness import ForkServer
from tests.boundary.model_files import trace
from tests.core.tiny_checkpoints import write_hf_folder
from tests.malformed_gguf import llama_gguf


@pytest.fixture(scope="session")
def good_model(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("boundary-good")
    write_hf_folder(root / "model")
    llama_gguf(root / "model", root, "model.gguf")
    return root


@pytest.fixture(scope="session")
def fork_server():
    server = ForkServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def normal_peak_mb(good_model, tmp_path_factory, fork_server) -> float:
    """A normal small run's peak, measured the way each case is (a child of the fork server)."""
    case = tmp_path_factory.mktemp("boundary-normal")
    shutil.copytree(good_model / "model", case / "model")
    outcome = fork_server.execute(trace(case / "model"), case)
    assert outcome.returncode == 0, outcome.stderr
    return outcome.peak_mb


@pytest.fixture
def case_dir(good_model, tmp_path) -> Path:
    shutil.copytree(good_model / "model", tmp_path / "model")
    shutil.copy(good_model / "model.gguf", tmp_path / "model.gguf")
    return tmp_path
