"""Training's torch thread count: set for the run and given back after it, so that `explorer train` called in-process
(a notebook, the API, a test) leaves torch's intra-op threads as it found them (set_num_threads is process-wide)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch runs on `count` threads inside the block, on as many as before after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
