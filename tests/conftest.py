"""Test-wide settings: Qt renders offscreen, no hub is ever asked, the user's files are never touched,
and garbage is collected on the main thread.

Isolation: before any test module is imported, HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME and
TRANSFORMER_EXPLORER_HOME point into one temporary folder, so the model store, its recent.json,
the autosave and every QSettings file (which Qt places under XDG_CONFIG_HOME) of the whole run
land there, as they do in the subprocesses tests start (they inherit the environment). The
pulled real models the `realmodel` tests need are copied file by file into that store
from `$TRANSFORMER_EXPLORER_TEST_MODELS` (where `make test` pulls them: .cache/test-models) or,
for a developer who pulled them for the app, from the user's store. At the end of the run the
user's store files and settings are hashed again and the run fails if a byte changed.
Under `make test` (which names the models it pulled in `$TRANSFORMER_EXPLORER_REQUIRED_MODELS`), a
`realmodel` test that skips because one of those models is missing fails instead: CI always runs them.

Python's cyclic collector runs on whichever thread allocates; if it frees a Qt widget left over
from an earlier test on a model-worker thread, PySide deadlocks (seen in a full run). As in the
app (explorer/app/thread/gc_guard.py), automatic collection is off and the main thread collects after
every test: the young generations each time, everything every FULL_EVERY tests (a full collection
after each of ~500 tests doubled the suite's time).
"""
import gc
import os

import pytest

from tests import isolation

# suite_guard: in CI no test may skip, and the whole suite must run; pull_catalog: the pull tests' catalog fixtures
pytest_plugins = ["tests.suite_guard", "tests.pull_catalog"]
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ISOLATED = isolation.isolate()


FULL_EVERY = 20
_finished = [0]


def pytest_sessionfinish(session, exitstatus):
    changed = isolation.changed_user_files(ISOLATED)
    if changed:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\nThe run changed the user's own files: " + ", ".join(changed))
    isolation.clean_up(ISOLATED)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    required = os.environ.get("TRANSFORMER_EXPLORER_REQUIRED_MODELS", "").split()
    if report.skipped and item.get_closest_marker("realmodel") and any(m in str(report.longrepr) for m in required):
        report.outcome = "failed"
        report.longrepr = f"a realmodel test may not skip under make test: {report.longrepr}"


@pytest.fixture(autouse=True)
def collect_garbage_on_the_main_thread():
    from explorer.app.thread import threads  # not at import: isolate() runs before the package loads

    gc.disable()
    yield
    _finished[0] += 1
    threads.release_finished()                      # as the app's collector does (explorer/app/thread/gc_guard.py)
    gc.collect(2 if _finished[0] % FULL_EVERY == 0 else 1)
