"""Asks for model work, kept apart from the state: a panel asks, the decoding controller answers.

The session's signals say what changed; these say what a panel wants done (step, branch on a token, the
logit lens, the candidates at a position, a job on the model thread) and carry the model thread's answers
back. Nothing here holds state.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class ModelRequests(QObject):
    """The named requests of the panels to the model, and the answers that come back."""

    force_requested = Signal(int)         # branch on this token id after the step looked at
    step_requested = Signal()
    logit_lens_requested = Signal(int)    # the per-layer logit lens at this position
    logit_lens_ready = Signal(object)     # {"position": p, "ids": (L, k), "probs": (L, k)} or (ids, probs)
    candidates_requested = Signal(int)    # the next-token candidates after this position
    candidates_ready = Signal(object)     # {"position": p, "ids": (k,), "probs": (k,), "token": id at p}
    model_job_requested = Signal(object)  # job(loaded, cancelled) to run where the model is (the worker)
    jobs_changed = Signal(object)         # {"running": what runs on the model thread, "queued": the jobs that wait}
    cell_requested = Signal(int, int)     # an attention cell was clicked: Show the work is wanted in front
