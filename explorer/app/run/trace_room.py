"""Room for one more step: the model's context and the trace memory budget, counted from the trace itself.

The controller asks before each step and prompt; a trace is measured once (TraceMeter counts each
shared step record once) and projected over what the model thread has yet to do.
"""
from __future__ import annotations

from explorer.app.run.trace_budget import TraceCost, TraceMeter, human_bytes

BUDGET_MENU = "Decode ▸ Trace Memory Budget…"


class TraceRoom:
    """What a trace costs and whether one more step fits `budget()` bytes and the context."""

    def __init__(self, budget) -> None:
        self._budget = budget                       # () -> the trace memory budget in bytes
        self._meter = TraceMeter()
        self._measured: tuple = (None, None)        # (trace, its TraceCost), measured once per trace

    def cost(self, trace, info) -> TraceCost:
        """The trace's measured cost, or the model's estimated one before a run of it."""
        if trace is None or not trace.steps or trace.model != info:
            return TraceCost.estimated(info)
        return self.measure(trace)

    def measure(self, trace) -> TraceCost:
        if self._measured[0] is not trace:
            self._measured = (trace, TraceCost.measured(trace, self._meter))
        return self._measured[1]

    def projected(self, trace, plan: tuple[int | None, int]) -> tuple[int, float]:
        """Tokens and trace bytes once the worker has done what it was asked (`plan`: where it starts from,
        and how many steps follow; generously counted)."""
        start, steps = plan
        cost, n = self.measure(trace), trace.n_tokens
        held = cost.held
        if start is not None and start != n:    # the model is ahead of what is shown, or starts over
            held = max(held + cost.growth(n, max(0, start - n)), cost.prefill_bytes(start))
            n = start
        return n + steps, held + cost.growth(n, steps)

    def step_problem(self, trace, n_tokens: int | None = None, held: float | None = None) -> str | None:
        """Why one more step would not fit a trace of `n_tokens` and `held` bytes (default: `trace`'s):
        one sentence, or None when it fits."""
        cost, budget = self.measure(trace), self._budget()
        if n_tokens is None:
            n_tokens, held = trace.n_tokens, cost.held
        limit = trace.model.max_positions
        if n_tokens + 1 > limit:
            return f"The context of {trace.model.name} is full: it holds {limit:,} positions."
        after = held + cost.growth(n_tokens, 1)
        if after > budget:
            return (f"One more step would take the trace to about {human_bytes(after)}, past the trace memory "
                    f"budget of {human_bytes(budget)} ({BUDGET_MENU}).")
        return None
