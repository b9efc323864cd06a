"""Test-wide settings: Qt renders offscreen, no hub is ever asked, and garbage is collected on the main thread.

Python's cyclic collector runs on whichever thread allocates; if it frees a Qt widget left over
from an earlier test on a model-worker thread, PySide deadlocks (seen in a full run). As in the
app (explorer/app/gc_guard.py), automatic collection is off and the main thread collects after
every test: the young generations each time, everything every FULL_EVERY tests (a full collection
after each of ~500 tests doubled the suite's time).
"""
import gc
import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


FULL_EVERY = 20
_finished = [0]


@pytest.fixture(autouse=True)
def collect_garbage_on_the_main_thread():
    gc.disable()
    yield
    _finished[0] += 1
    gc.collect(2 if _finished[0] % FULL_EVERY == 0 else 1)
