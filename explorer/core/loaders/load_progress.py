"""How a model load shares its progress bar: the loaders read the tokenizer first (its TOKENIZER_SHARE), then the
weights up to READY_AT of it, and what is left is making the model (runtime.load_model). A leaf module, so that a
loader and the package that names the loaders do not import each other."""
from __future__ import annotations

from typing import Callable

Progress = Callable[[float, str], None]
READY_AT = 0.95         # of a load's bar once the files are read: what is left is making the model (runtime)
TOKENIZER_SHARE = 0.15  # of the bar, reading or building the tokenizer, before the weights: Gemma 3 270M's first
                        # open built its 262k pieces in ~6 s, the bar at 0% with no Cancel seen (issue 22)


def phase(progress: Progress | None, start: float, end: float) -> Progress | None:
    """`progress` for one phase of the load, its share 0..1 drawn between `start` and `end` of the bar."""
    return None if progress is None else (lambda share, text: progress(start + (end - start) * share, text))
