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


# The tokenizers library builds a tokenizer holding Python's lock: every thread waits, the window's too. Gemma 3's
# 513,511 merges took it 2.2 s, SmolLM2's 48,900 about a tenth of that. From this many merges, a load says so first.
PAUSES_FROM_MERGES = 150_000
# No count in the words: the saved tokenizer's merges are counted on its bytes, about (drive30: 513,511, then 520,805)
PAUSE_WORDS = "building the tokenizer (the window waits a few seconds)"


# safetensors serializes a float32 copy in one call that holds Python's lock too: Gemma 3's 1.1 GB held the window
# 0.69 s on a quiet machine and 1.2-1.9 s on a loaded one (drive31: the longest wait of its first open, unsaid).
PAUSES_FROM_BYTES = 256 << 20
COPY_PAUSE_WORDS = " (the window waits a moment)"


class Pause(str):
    """A progress message said just before a call that holds Python's lock for seconds: a window shows it before
    the call starts (the model thread waits until it is shown), instead of freezing with nothing said."""


def before_a_build(progress: Progress | None, share: float, merges: int) -> None:
    """Say, as a Pause, that the tokenizer of `merges` merges is built now, when that holds the window a while."""
    if progress is not None and merges >= PAUSES_FROM_MERGES:
        progress(share, Pause(PAUSE_WORDS))


def before_a_copy(progress: Progress | None, share: float, n_bytes: int, words: str) -> None:
    """Say `words` (what is written), as a Pause where a copy of `n_bytes` holds the window a while, else plainly."""
    if progress is None:
        return
    progress(share, Pause(words + COPY_PAUSE_WORDS) if n_bytes >= PAUSES_FROM_BYTES else words)
