"""What the model runs under: the sampling, the precision the trace is recorded in, the trace memory budget
and the experiments that are on. Each setter does nothing when nothing changed. DecodingController takes
these from here.
"""
from __future__ import annotations

from explorer.app.thread.core_api import SamplingSettings
from explorer.core.intervention import active


class RunSettings:
    """The run's settings, for DecodingController (a mixin: it reads the controller's worker and signals)."""

    def set_trace_budget(self, n_bytes: int) -> None:
        if int(n_bytes) != self.trace_budget:
            self.trace_budget = int(n_bytes)
            self.budget_changed.emit(self.trace_budget)

    def set_record_dtype(self, dtype: str, redo: bool = True) -> None:
        """Record the trace in float32 or float16 (half the memory); the current run is redone (unless a run
        that replaces it follows: `redo` False)."""
        if dtype != self.record_dtype:
            self.record_dtype = dtype
            self.worker.set_recording(dtype, redo)
            self.record_dtype_changed.emit(dtype)

    def set_sampling(self, sampling: SamplingSettings) -> None:
        if sampling != self.sampling:
            self.sampling = sampling
            self.worker.set_sampling(sampling)

    def _on_experiments_changed(self, experiments) -> None:
        """The model redoes the run under the experiments that are on (a branch) and decodes on under them,
        unless a replay that follows records the run (a session being opened)."""
        intervention = active(experiments)
        self.worker.set_intervention(None if intervention.is_empty else intervention, self._redo_runs)
