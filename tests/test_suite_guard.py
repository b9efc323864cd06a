"""The CI guard of tests/suite_guard.py: a skip, or a suite that ran too few tests, fails a CI run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import suite_guard

ROOT = Path(__file__).resolve().parents[1]
SUITE = '''
import pytest

def test_runs():
    assert True

def test_skips_for_a_missing_library():
    pytest.importorskip("no_such_reference_library")
'''


def run_pytest(folder: Path, ci: str | None, *options: str) -> subprocess.CompletedProcess:
    (folder / "pytest.ini").write_text("[pytest]\ntestpaths = .\n")
    (folder / "test_small.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")} | {"PYTHONPATH": str(ROOT)}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.suite_guard", "-p", "no:cacheprovider",
                           *options],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_a_ci_run_with_a_skip_and_too_few_tests_fails(tmp_path):
    done = run_pytest(tmp_path, "true")
    assert done.returncode == 1, done.stdout
    assert "skipped in CI: test_small.py::test_skips_for_a_missing_library" in done.stdout
    assert "no_such_reference_library" in done.stdout
    assert f"the suite executed 1 tests, fewer than the {suite_guard.MIN_TESTS}" in done.stdout


def test_the_guard_holds_when_the_suite_runs_in_several_processes(tmp_path):
    """make test runs pytest-xdist workers: the controller hears every worker's reports and fails the run."""
    done = run_pytest(tmp_path, "true", "-n", "2")
    assert done.returncode == 1, done.stdout
    assert "skipped in CI: test_small.py::test_skips_for_a_missing_library" in done.stdout
    assert f"the suite executed 1 tests, fewer than the {suite_guard.MIN_TESTS}" in done.stdout


def test_outside_ci_the_same_run_passes_with_its_skip(tmp_path):
    done = run_pytest(tmp_path, None)
    assert done.returncode == 0 and "1 passed, 1 skipped" in done.stdout, done.stdout
    assert run_pytest(tmp_path, "false").returncode == 0


def test_the_floor_is_checked_only_for_a_whole_suite_run():
    assert suite_guard.problems([], ran=10, whole=False) == []
    assert suite_guard.problems([], ran=10, whole=True, minimum=11)
    assert suite_guard.problems([], ran=11, whole=True, minimum=11) == []
