"""A device or dtype chosen in the toolbar reopens the open model only when it differs from the one it runs on."""
from __future__ import annotations

from types import SimpleNamespace

import pytest


@pytest.fixture
def window(window_recording_loads):
    return window_recording_loads


def test_a_new_device_reopens_the_model_and_the_same_one_does_not(window):
    window.model_bar.device_changed.emit("cpu", "float32")
    assert window.loads == [], "nothing is open: nothing to reopen"
    window.controller.summary = SimpleNamespace(reference="tiny-model", device="cpu", dtype="float32")
    window.model_bar.device_changed.emit("cpu", "float32")
    assert window.loads == []
    window.model_bar.device_changed.emit("cpu", "bfloat16")
    window.model_bar.device_changed.emit("cuda", "float32")
    assert window.loads == ["tiny-model", "tiny-model"]
    assert (window.settings.device, window.settings.dtype) == ("cuda", "float32")
