"""What the GUI asks the model thread to do, as frozen values: the decoding requests, the settings, and the
named model jobs a panel hands to its ModelCall. The queue that orders and coalesces them is request_queue.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from explorer.app.thread.core_api import run_named_job


@dataclass(frozen=True)
class Load:
    path: str
    device: str = "cpu"
    dtype: str = "float32"
    seq: int = -1


@dataclass(frozen=True)
class Unload:
    """File ▸ Close Model: let go of the model and its decoder (what is queued and running is dropped, as for a
    Load), so its memory is freed and every panel shows no model."""

    seq: int = -1


@dataclass(frozen=True)
class Prefill:
    ids: tuple[int, ...]
    seq: int = -1


@dataclass(frozen=True)
class Step:
    count: int = 1
    seq: int = -1


@dataclass(frozen=True)
class Back:
    count: int = 1
    seq: int = -1


@dataclass(frozen=True)
class Force:
    token_id: int
    at_steps: int                   # the trace length the person was looking at when choosing
    seq: int = -1


@dataclass(frozen=True)
class Replay:
    """Rebuild a trace exactly: prefill `ids`, then step, forcing `forced` (step index, id) on the way and
    taking `decoded[i]` as step i's choice (the tokens a saved trace decoded, whatever the sampling is now)."""

    ids: tuple[int, ...]
    forced: tuple[tuple[int, int], ...] = ()
    n_steps: int = 1
    decoded: tuple[int, ...] = ()   # one id per step, or none: sample the steps not forced
    give_back: bool = False         # queued by the model thread: a run stopped half way took the window's trace
    seq: int = -1


@dataclass(frozen=True)
class LogitLens:
    """Read the residual stream after every layer at `position` through the unembedding."""

    position: int
    k: int = 5
    seq: int = -1


@dataclass(frozen=True)
class Candidates:
    """The top-k next tokens after `position`, for a prompt position the trace did not record them at."""

    position: int
    k: int = 10
    seq: int = -1


@dataclass(frozen=True)
class SetRecording:
    """Record the trace's arrays in `dtype` ("float32" or "float16"); the current run is redone in it, its
    tokens kept: a dtype changes what is recorded, never what the model chose (the sampling bar's settings of
    now may draw others: they are for the steps to come)."""

    dtype: str
    redo: bool = True               # False: a run asked next replaces the current one (a session opened)
    seq: int = -1
    keeps_decoded: ClassVar[bool] = True


@dataclass(frozen=True)
class SetSampling:
    sampling: object
    seq: int = -1


@dataclass(frozen=True)
class SetIntervention:
    """Run under `intervention` (explorer.core.intervention.Intervention, None: none): the current run is
    redone under it, a branch, and decoding continues under it. The branch's sampled steps are decided again
    by the changed model, as a greedy decode's are: the draw at a position depends only on (seed, position)
    (core.sampling), so while the sampling settings stay as they were, the experiments alone move a token and
    turning them off brings the run's tokens back."""

    intervention: object
    redo: bool = True               # False: a run asked next replaces the current one (a session opened)
    seq: int = -1
    keeps_decoded: ClassVar[bool] = False


@dataclass(frozen=True)
class Sync:
    """Nothing to do: queued by a cancel that leaves no request to finish, so the GUI still learns it is idle."""

    seq: int = -1


@dataclass(frozen=True)
class ModelJob:
    """Run `job(loaded, cancelled)` with the model this thread holds: the KV lab's conversions and the
    Q/K/V panel's weights use it, so the app keeps one copy of the model and torch stays off the GUI thread.
    `cancelled()` turns true when the request is cancelled or superseded by a Load."""

    job: object
    seq: int = -1


# ----- named model jobs: what a panel asks of the loaded model, as values ----------------------
# A panel hands one of these to its ModelCall (as it would a job(loaded, progress, cancel)); the
# model-thread module core_api turns it into the torch-side call, so no panel imports torch-side core.
@dataclass(frozen=True)
class WhatIfJob:
    """The KV lab's conversion: `variant` of the loaded model against the original, `steps` steps; the first
    rows take `followed` (the session's chosen ids, so a branched or sampled session is the one compared), the
    rest the original's greedy choice."""

    variant: str
    steps: int
    prompt_ids: tuple[int, ...]
    followed: tuple[int, ...] = ()

    def __call__(self, loaded, progress, cancel):
        return run_named_job(self, loaded, progress, cancel)


@dataclass(frozen=True)
class HeadWeightsJob:
    """The Q/K/V panel's weights of one head: W^Q, W^K, W^V (and MLA's factors) of `layer`, `head`."""

    layer: int
    head: int

    def __call__(self, loaded, progress, cancel):
        return run_named_job(self, loaded, progress, cancel)


class _NamedJob:
    """Run by core_api on the model thread, with the loaded model, like WhatIfJob and HeadWeightsJob."""

    def __call__(self, loaded, progress, cancel):
        return run_named_job(self, loaded, progress, cancel)


@dataclass(frozen=True)
class AttributionJob(_NamedJob):
    """Why this token: the logit of `token` (None: the top prediction) after `position` of `ids`, split."""

    ids: tuple[int, ...]
    position: int
    token: int | None = None
    intervention: object = None       # the experiments on (core.intervention.Intervention), None: none


@dataclass(frozen=True)
class ResidualStreamJob(_NamedJob):
    """The residual stream at `position` of `ids`: what each layer adds, and the logit lens's top `k`."""

    ids: tuple[int, ...]
    position: int
    k: int = 5
    intervention: object = None       # the experiments on (core.intervention.Intervention), None: none


@dataclass(frozen=True)
class HeadScoresJob(_NamedJob):
    """The head atlas: previous-token, induction and sink scores on the model's random ids repeated twice."""

    what: ClassVar[str] = "the head atlas's scoring"


@dataclass(frozen=True)
class OutputWeightsJob(_NamedJob):
    """Show the work past y_i: the head's W^O_h, and MLA's W_h^UK (None for other attention kinds)."""

    layer: int
    head: int


@dataclass(frozen=True)
class BlockWalkJob(_NamedJob):
    """Show the work for a block: position `position` of `ids` through block `layer`."""

    ids: tuple[int, ...]
    layer: int
    position: int


@dataclass(frozen=True)
class CompareNextTokenJob(_NamedJob):
    """The Experiments dock: the top `k` next tokens after `ids`, before and under `intervention`
    (explorer.core.intervention.Intervention)."""

    what: ClassVar[str] = "the before/after comparison"
    ids: tuple[int, ...]
    intervention: object
    k: int


@dataclass(frozen=True)
class PatchMapJob(_NamedJob):
    """The patching tab's map: logit(`target`) - logit(`against`) of the `corrupt` prompt with each `site`
    ("head" or "resid") patched from the `clean` one."""

    clean: str
    corrupt: str
    target: str
    against: str
    site: str
