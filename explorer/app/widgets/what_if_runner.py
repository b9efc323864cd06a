"""The KV lab's what-if conversion as a model job: the job, where it runs, and its state shown in a WhatIfView.

The job (thread.requests.WhatIfJob, run by core_api) converts the loaded model to another variant (fewer K/V heads by
mean-pooling, more by replicating them, MLA by truncated SVD: explorer.core.convert; each progress stage's words
come from kv_variants.conversion_work) and decodes the same prompt with both (explorer.core.what_if).
It runs on the app's model worker, or on a test's or a script's executor. The runner shows its working state,
progress and a cancelled or failed run's sentence; the result goes out on `finished`, and the panel keeps it.
"""
from __future__ import annotations

import numpy as np

from explorer.app.thread.requests import WhatIfJob
from explorer.app.widgets.model_call import Executor, ModelCall
from explorer.app.widgets.what_if_view import WhatIfView

CANCELLED_BECAUSE = "Conversion cancelled: "     # how the runner's own cancel for a reason (cancel_because) begins
CANCELLED_ENDING = "conversion was cancelled."   # how the model thread's cancel ends (convert.ConversionCancelled)


def what_if_job(variant: str, steps: int, prompt_ids: np.ndarray, followed=()) -> WhatIfJob:
    """The conversion as a named model job, run by core_api: job(loaded, progress, cancel) -> what_if.WhatIf;
    `followed`: the session's chosen ids, which the first rows take (what_if.compare)."""
    return WhatIfJob(variant, int(steps), tuple(int(i) for i in prompt_ids), tuple(int(i) for i in followed))


def steps_room(trace) -> int:
    """How many predictions a what-if of `trace`'s prompt can compare within the model's context: the prefill's,
    then one per decoding step, each step feeding one more token after the prompt's (what_if.compare)."""
    return trace.model.max_positions - len(trace.steps[0].token_ids) + 1


class WhatIfRunner(ModelCall):
    """One conversion at a time, shown in `view`; `to_worker` hands a job to the app's model worker."""

    def __init__(self, view: WhatIfView, to_worker: Executor, parent=None) -> None:
        super().__init__(parent)
        self.view = view
        self.to_worker = to_worker
        self.variant = ""                  # the target of the conversion last started
        self._on_worker = False
        view.cancel_button.clicked.connect(self.cancel)
        self.progress_changed.connect(self._on_progress)
        self.failed.connect(self._show_failure)

    def cancel(self) -> None:
        """Ask the conversion to stop, and say so at once: the model thread stops at its next check (a layer
        factored or run, a step decoded), and until then the view read "Converting… 13 %" with Cancel enabled."""
        super().cancel()
        if self.running:
            self.view.show_cancelling(self.variant)

    def cancel_because(self, why: str) -> None:
        """Stop the conversion because of `why` ("another model is being opened") and say so at once, Cancel off:
        the model thread drops the job itself (a Load supersedes it) but reached its next check only seconds
        later, the view reading "Converting… 1 %" with Cancel live while the Model box named another model."""
        if self.running:
            self.abandon(f"{CANCELLED_BECAUSE}{why}.")

    def drop_work(self) -> None:
        """Stop (Escape), another run or a failure dropped the panel's work (base.Panel's one path): the
        conversion is cancelled and says so. ModelCall's quiet abandon("") read "the conversion failed." here."""
        self.abandon("The conversion was cancelled.")

    @property
    def cancelling(self) -> bool:
        """Cancel was pressed and the conversion has not stopped yet (its Cancel button stays disabled)."""
        return self.running and self._cancel.event.is_set()

    def _on_progress(self, fraction: float, what: str) -> None:
        if not self.cancelling:                 # a late report must not write over "Cancelling…"
            self.view.show_progress(fraction, what)

    def convert(self, variant: str, steps: int, job, executor: Executor | None) -> bool:
        """Start `job`, the conversion to `variant` over `steps` steps, on `executor` (None: the worker)."""
        self.variant, self._on_worker = variant, executor is None
        self.view.show_working(variant, steps)
        self.view.error_line.clear()
        return self.start(job, executor or self.to_worker)

    def on_busy_changed(self, busy: bool) -> None:
        # The worker answers a job before it reports idle: still running now means it dropped the job.
        if not busy and self._on_worker and self.running:
            self.abandon("The conversion was cancelled.")

    def _show_failure(self, message: str) -> None:
        cancelled = message.startswith(CANCELLED_BECAUSE) or message.lower().endswith(CANCELLED_ENDING)   # not an error
        full = " is full" in message            # a refusal the person can act on, not a fault (decode.full_context)
        said = message if cancelled else f"{message}: fewer steps or a shorter prompt." if full else \
            "the conversion failed."
        self.view.show_no_result(self.variant, said)
        if not cancelled and not full:
            self.view.error_line.show_error(message)
