"""The progress of a pass of the prompt on the model thread, as the fraction and words that run_progress carries to the
GUI (run/run_progress.RunProgress shows them): a prefill's layers, and a replay's steps decoded after them. A replay's
layers fill only the prefill's share of the bar, by the tokens each part runs, and its steps the rest, so 100 % means
done. What a cancelled pass hands back stays with decode_loop.DecodeLoop, which owns the decoder."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from explorer.views.words import plural

Emit = Callable[[float, str], None]      # (fraction of the bar, what runs)


def replay_words(n_ids: int, n_steps: int) -> str:
    """What a replay of `n_ids` prompt tokens and `n_steps` steps (the first one the prefill's) runs, in words."""
    steps = f" before decoding {plural(n_steps - 1, 'token')}" if n_steps > 1 else ""
    return f"Replaying the prompt's {plural(n_ids, 'token')}{steps}"


def prefill_share(n_ids: int, n_steps: int) -> float:
    """The bar's part of a replay's prefill: its tokens among all the replay runs (the prompt's, one per step after)."""
    return n_ids / (n_ids + n_steps - 1)


@contextmanager
def layer_progress(decoder, emit: Emit, check: Callable[[], None], what: str, share: float = 1.0) -> Iterator[None]:
    """While a prefill runs on `decoder`, emit each layer done as `share` of the bar times the layers' fraction, and
    call `check()` between layers first (it raises where the run was cancelled: the pass stops there)."""
    def report(done: int, total: int) -> None:
        check()
        emit(share * done / total, f"{what}: layer {done} of {total}")

    decoder.progress = report
    try:
        yield
    finally:
        decoder.progress = None


def step_progress(check: Callable[[], None], emit: Emit, what: str, share: float, n_steps: int) -> Callable[[], None]:
    """replay.replay_steps' check before each of `n_steps` steps: `check()`, then the steps done so far as the rest of
    the bar past the prefill's `share`."""
    done = iter(range(n_steps + 1))

    def check_and_report() -> None:
        check()
        step = next(done, n_steps)
        if n_steps:
            emit(share + (1 - share) * step / n_steps, f"{what}: token {step} of {n_steps} decoded")
    return check_and_report
