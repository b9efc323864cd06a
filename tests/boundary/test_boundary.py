"""The boundary corpus: every hostile case, each in its own process with its own HOME and store, keeps the
contract of tests/boundary/harness.py (exit 2 and one sentence, or an ExplorerError from the API; no
traceback or panic; no hang; bounded memory; nothing the user had is lost)."""
from __future__ import annotations

import dataclasses
import shutil

import pytest

from tests.boundary import model_files, permissions, values, writers
from tests.boundary.harness import execute_fresh, judged
from tests.boundary.model_files import trace

CASES = model_files.CASES + values.CASES + permissions.CASES + writers.CASES


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hostile_input_is_refused_cleanly(case, case_dir, normal_peak_mb, fork_server):
    outcome = fork_server.execute(case.build(case_dir), case_dir)
    faults = judged(case, outcome, case_dir, normal_peak_mb)
    assert not faults, f"{case.kind}: " + "; ".join(faults)


def test_the_corpus_covers_every_class_and_names_each_case_once():
    kinds = {case.kind for case in CASES}
    assert kinds == {"data loss", "hang", "bomb", "traceback", "nan", "message"}
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))


# A few cases through a new interpreter, `python -m explorer` as a person runs it: the forked children
# above skip only torch's import, and these show that they answer as the real entry point does.
FRESH = ["--temperature nan", "model.safetensors a FIFO", "trace --out on a full disk", "GGUF NaN weight",
         "API Sampling(temperature=nan)", "model.safetensors without read permission",
         "export onto a read-only map.png"]


@pytest.fixture(scope="module")
def fresh_normal_peak_mb(good_model, tmp_path_factory) -> float:
    case = tmp_path_factory.mktemp("boundary-fresh-normal")
    shutil.copytree(good_model / "model", case / "model")
    outcome = execute_fresh(trace(case / "model"), case)
    assert outcome.returncode == 0, outcome.stderr
    return outcome.peak_mb


@pytest.mark.parametrize("name", FRESH)
def test_a_new_interpreter_answers_as_the_forked_child(name, case_dir, fresh_normal_peak_mb):
    case = next(case for case in CASES if case.name == name)
    outcome = execute_fresh(dataclasses.replace(case.build(case_dir), fresh=True), case_dir)
    faults = judged(case, outcome, case_dir, fresh_normal_peak_mb)
    assert not faults, "; ".join(faults)
