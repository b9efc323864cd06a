"""The head atlas's description of the user's text, read on a thread of its own where the trace is long.

A long prompt's maps are rebuilt from Q and K (explorer.core.attention_maps), and describing every head
reads each of them once: at 8,000 tokens, minutes of numpy. The reading runs beside the GUI (and beside
the model thread, which stays free to decode), layer by layer; each layer read is shown as it comes,
with a progress bar and a Cancel. What was read is kept per record (head_description.DescriptionSums):
a repaint or a reopened tab reads nothing again, a trace one step longer reads one new row per layer, and
a new prompt's trace starts from nothing, its layers not yet read shown empty, never the old ones.
"""
from __future__ import annotations

import weakref

from PySide6.QtCore import QObject, Signal

from explorer.app.widgets.model_call import ModelCall, thread_executor
from explorer.core.head_description import (
    DescriptionSums,
    HeadDescription,
    describe_heads,
    described_so_far,
    entries_to_read,
)
from explorer.core.trace import Trace

INLINE_TRACE = 1 << 21     # query x key x head entries described at once on the GUI thread (~30 ms)
INLINE_RECORD = 1 << 18    # a record this small (a decoding step's row) is read when shown, beside the reading


class DescriptionReader(QObject):
    """What is known of a trace's head description now, and the background reading of the rest."""

    progressed = Signal()              # a layer more was read, or the reading finished, failed or stopped

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.sums = DescriptionSums()
        self.call = ModelCall(self)
        self.call.progress_changed.connect(lambda _fraction, _what: self.progressed.emit())
        self.call.finished.connect(self._ended)
        self.call.failed.connect(self._failed)
        self.executor = thread_executor(None)        # numpy over the trace: no model needed
        self.reading: Trace | None = None            # the trace being read
        self.failure = ""
        self._stopped = None                         # weakref to the prefill record whose reading was cancelled
        self.started = 0                             # readings started (tests count them)

    def description(self, trace: Trace) -> HeadDescription:
        """The layers described so far (NaN rows for the others), starting the reading of the rest
        unless the person cancelled it for this prompt."""
        if entries_to_read(trace, self.sums) <= INLINE_TRACE:
            return describe_heads(trace, sums=self.sums)
        so_far = described_so_far(trace, self.sums, read_below=INLINE_RECORD)
        if so_far.layers_done < trace.model.n_layers and not self.stopped_for(trace):
            self._read(trace)
        return so_far

    @property
    def running(self) -> bool:
        return self.call.running

    def stopped_for(self, trace: Trace) -> bool:
        """Whether the person cancelled the reading of this trace's prompt."""
        return self._stopped is not None and self._stopped() is trace.steps[0]

    def cancel(self) -> None:
        """Stop now: the thread stops before its next head (describe_heads polls the flag abandon sets), and
        the reading of this prompt is not started again until `resume`; the layers read so far stay."""
        if self.call.running:
            self._stopped = weakref.ref(self.reading.steps[0])
            self.call.abandon("")
            self.progressed.emit()

    def resume(self) -> None:
        """Read on when next asked (description) from the layers kept."""
        self._stopped = None

    def trace_changed(self, trace: Trace | None) -> None:
        """A reading of another prompt stops (its trace is not the one shown); one of the same prompt, a
        step shorter or longer, goes on, since the new trace shares its prefill's records."""
        if self.reading is not None and (trace is None or not trace.steps
                                         or self.reading.steps[0] is not trace.steps[0]):
            self.call.abandon("")

    def _read(self, trace: Trace) -> None:
        if self.call.running:
            if self.reading.steps[0] is trace.steps[0]:
                return                                  # the same prompt: what it reads is what this needs
            self.call.abandon("")
        self.reading, self.failure = trace, ""
        self.started += 1
        n_layers, sums = trace.model.n_layers, self.sums

        def job(_loaded, progress, cancel):
            return describe_heads(trace, sums=sums, cancel=cancel,
                                  on_layer=lambda layer: progress((layer + 1) / n_layers,
                                                                  f"layer {layer + 1} of {n_layers}"))
        self.call.start(job, self.executor)

    def _ended(self, _description) -> None:
        self.reading = None
        self.progressed.emit()

    def _failed(self, message: str) -> None:
        """A failure is said; an abandoned reading ("": cancelled, or another prompt's) ends quietly."""
        self.reading = None
        if message:
            self.failure = message
            self.progressed.emit()
