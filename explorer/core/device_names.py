"""The device names a model can compute on, written once (torch-free: the command line checks its flags with it
before torch is imported): cpu, cuda, cuda:N, mps or auto. Not meta, which holds no numbers: a model loaded there
through the API failed at its first run with torch's "Tensor.item() cannot be called on meta tensors"."""
from __future__ import annotations

import re

from explorer.core.errors import ModelLoadError

DEVICE = re.compile(r"(cpu|auto|mps|cuda(:\d{1,3})?)")
NAMES = "cpu, cuda, cuda:N, mps or auto"


def is_device(name: object) -> bool:
    return isinstance(name, str) and DEVICE.fullmatch(name) is not None


def check(name: object) -> str:
    """`name` where it is a device a model can compute on, else ModelLoadError."""
    if not is_device(name):
        raise ModelLoadError(f"{name!r} is not a device: use {NAMES}.")
    return name
