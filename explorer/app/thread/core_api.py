"""The app's narrow door into the core: everything the worker calls, in one object.

The core imports torch, so it is imported lazily, on the worker thread, the first
time a model is needed; the window opens without waiting for torch. Tests pass a
`CoreApi` built from doubles instead of `CoreApi.real()`.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from explorer.app.thread import threads
from explorer.core import store
from explorer.core.errors import ModelLoadError
from explorer.core.loaders.model_file import find_model
from explorer.core.trace import ModelInfo
from explorer.views.session_state import SamplingSettings  # noqa: F401 (re-exported: the toolbar's settings)


@dataclass(frozen=True)
class LoadedSummary:
    """What the GUI may hold about a loaded model: no torch objects inside."""

    reference: str                   # what was asked for: a catalog name or a path
    name: str
    path: str
    info: ModelInfo
    tokenizer: Any                   # explorer.core.tokens.TextTokenizer (pure tokenizers, no torch)
    license: str | None
    device: str
    dtype: str
    no_step_reason: str | None = None  # why Step means nothing for this model (an encoder); None: it decodes

    @classmethod
    def of(cls, loaded, request) -> "LoadedSummary":
        return cls(reference=request.path, name=str(getattr(loaded, "name", request.path)),
                   path=str(getattr(loaded, "path", request.path)), info=loaded.info, tokenizer=loaded.tokenizer,
                   license=getattr(loaded, "license", None), device=request.device, dtype=request.dtype,
                   no_step_reason=no_step_reason(loaded.info))

    @property
    def can_step(self) -> bool:
        return self.no_step_reason is None


def no_step_reason(info) -> str | None:
    """The tooltip of a disabled Step: an encoder-only model predicts no next token. Called on the worker
    thread, which has imported torch already (explorer.core.encoder needs it)."""
    if not getattr(info, "is_encoder_only", False):
        return None
    from explorer.core.encoder import NO_DECODING  # torch: on the model thread

    return NO_DECODING[0].upper() + NO_DECODING[1:] + "."


@dataclass(frozen=True)
class CoreApi:
    """The things the worker needs from the core."""

    load_model: Callable                   # (path, device=, dtype=, progress=) -> LoadedModel
    make_decoder: Callable                 # (loaded, SamplingSettings, record dtype) -> Decoder
    sampling: Callable                     # SamplingSettings -> core Sampling
    available_devices: Callable            # () -> {device: [dtype, ...]}
    resolve: Callable = str                # catalog name or path -> path to open
    prefetch: Callable = lambda reference: None   # start reading a model's weights ahead of its load (None: stop)
    ids: Callable = lambda ids: np.asarray(ids, dtype=np.int64)

    @classmethod
    def real(cls) -> "CoreApi":
        return cls(load_model=_real_load_model, make_decoder=_real_make_decoder, sampling=_real_sampling,
                   available_devices=_real_available_devices, resolve=_real_resolve, prefetch=_real_prefetch)


def _real_load_model(path, device="cpu", dtype="float32", progress=None):
    from explorer.core.runtime import load_model  # torch: on the model thread

    return load_model(path, device=device, dtype=dtype, progress=progress)


def _real_sampling(settings: SamplingSettings):
    return settings                     # the toolbar's settings are the engine's Sampling (sampling_settings.py)


def _real_make_decoder(loaded, settings: SamplingSettings, record_dtype: str = "float32"):
    """The driver that fits the model: a decoder, an encoder-decoder translating, or an encoder (no Step);
    its trace records in `record_dtype` (float16 halves the trace)."""
    from explorer.core.decode import RecordOptions  # torch: on the model thread
    from explorer.core.drivers import make_decoder  # torch: on the model thread

    return make_decoder(loaded, RecordOptions(dtype=record_dtype), _real_sampling(settings))


def _real_resolve(reference: str) -> str:
    """A path that exists is opened as it is; anything else is a name for the model store."""
    if Path(reference).expanduser().exists():
        return str(Path(reference).expanduser())
    return str(store.resolve(reference))


def _real_prefetch(reference: str | None) -> None:
    """Start reading a pulled GGUF's float32 copy on a thread of the app's registry (gguf_copy, torch-free;
    threads.start: quitting stops it at its next piece and joins it): asked
    from the GUI thread when a load is queued, it runs while the model thread still imports torch.
    Anything wrong is left for the load itself to report. None drops what was read ahead and not
    taken (the load was cancelled before it ran)."""
    from explorer.core.loaders import gguf_copy  # start-up: read at the first load, not at launch

    if reference is None:
        gguf_copy.drop()
        return
    try:
        model = find_model(_real_resolve(reference))
        if model is not None and model.format == "gguf":
            gguf_copy.prefetch(model.path, start=threads.start)
    except Exception:           # noqa: BLE001 - a read ahead may never fail the request it helps
        pass


# Which dtypes each device computes well; a device is offered only where torch finds it.
_DEVICE_DTYPES = {"cpu": ["float32", "bfloat16"], "cuda": ["float32", "bfloat16", "float16"],
                  "mps": ["float32", "float16"]}


def _real_available_devices() -> dict[str, list[str]]:
    from explorer.core.runtime import resolve_device  # torch: on the model thread

    devices = {}
    for device, dtypes in _DEVICE_DTYPES.items():
        try:
            resolve_device(device)
        except ModelLoadError:
            continue
        devices[device] = dtypes
    return devices


def is_out_of_memory(error: BaseException) -> bool:
    """torch.cuda.OutOfMemoryError (or MPS's RuntimeError), recognised without importing torch."""
    return type(error).__name__ == "OutOfMemoryError" or "out of memory" in str(error).lower()


def _what_if(job, loaded, progress, cancel):
    from explorer.core.what_if import what_if  # torch: on the model thread

    return what_if(loaded, job.variant, list(job.prompt_ids), job.steps, progress=progress, cancel=cancel,
                   followed=job.followed)


def _head_weights(job, loaded, progress, cancel):
    from explorer.core.weights_view import head_weights  # torch: on the model thread

    return head_weights(loaded, job.layer, job.head)


def _attribution(job, loaded, progress, cancel):
    from explorer.core.attribution import attribute  # torch: on the model thread

    return attribute(loaded, job.ids, job.position, job.token, intervention=job.intervention, cancel=cancel)


def _residual_stream(job, loaded, progress, cancel):
    from explorer.core.attribution import residual_stream  # torch: on the model thread

    return residual_stream(loaded, job.ids, job.position, job.k, decoder=_DECODER.get(), cancel=cancel,
                           intervention=job.intervention)


def _head_scores(job, loaded, progress, cancel):
    from explorer.core.head_scores import score_heads  # start-up: only the model thread needs it

    return score_heads(loaded, cancel=cancel)


def _output_weights(job, loaded, progress, cancel):
    """W^O_h of the head, and MLA's W_h^UK (None elsewhere): Show the work past y_i."""
    from explorer.core.attribution import output_columns  # torch: on the model thread
    from explorer.core.weights_view import head_weights  # torch: on the model thread

    w_uk = head_weights(loaded, job.layer, job.head).matrices[f"W_{job.head}^{{UK}}"] if loaded.config.mla else None
    return output_columns(loaded, job.layer, job.head), w_uk


def _block_walk(job, loaded, progress, cancel):
    from explorer.core.block_walk import walk_block  # torch: on the model thread

    return walk_block(loaded, job.ids, job.layer, job.position, decoder=_DECODER.get())


def _compare_next_token(job, loaded, progress, cancel):
    from explorer.core.experiments import compare_next_token  # torch: on the model thread

    return compare_next_token(loaded, job.ids, job.intervention, job.k)


def _patch_map(job, loaded, progress, cancel):
    """The patching map of the job's prompts; the target and against texts must be one token each."""
    from explorer.core import patching  # torch: on the model thread

    tokenizer = loaded.tokenizer
    target_id = patching.single_token(tokenizer, job.target, "the target")
    against_id = patching.single_token(tokenizer, job.against, "the token to compare against")
    return patching.patch_map(loaded, tokenizer.encode(job.clean).ids, tokenizer.encode(job.corrupt).ids, target_id,
                              against_id, job.site, cancel=cancel,
                              progress=lambda done, total: progress(done / total, f"{done} of {total} sites"))


# requests' job class name -> its handler; a new named job adds its row here (requests.py stays torch-free).
NAMED_JOBS = {"WhatIfJob": _what_if, "HeadWeightsJob": _head_weights, "AttributionJob": _attribution,
              "ResidualStreamJob": _residual_stream, "HeadScoresJob": _head_scores,
              "OutputWeightsJob": _output_weights, "BlockWalkJob": _block_walk,
              "CompareNextTokenJob": _compare_next_token, "PatchMapJob": _patch_map}


_DECODER: ContextVar = ContextVar("decoder", default=None)     # the model thread's decoder while a job runs


@contextmanager
def lending(decoder):
    """Lend the model thread's decoder to the named jobs run inside: the residual stream and the block walk
    read one position through its KV cache (core.attribution.row_at) when it ran their very ids."""
    token = _DECODER.set(decoder)
    try:
        yield
    finally:
        _DECODER.reset(token)


def run_named_job(job, loaded, progress, cancel):
    """A panel's named job (a requests.*Job value) run on the model thread with the loaded model: the one
    place the GUI's panels reach the torch-side core."""
    handler = NAMED_JOBS.get(type(job).__name__)
    if handler is None:
        raise TypeError(f"{type(job).__name__} is not a named model job (core_api.NAMED_JOBS)")
    return handler(job, loaded, progress, cancel)
