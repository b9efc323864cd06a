"""The Python API: the engine the app draws, for notebooks and scripts.

    import explorer
    model = explorer.load("smollm2-135m")                 # a catalog name, HF folder or .gguf
    run = model.run("The capital of France is", steps=3)  # greedy unless sampling=explorer.Sampling(...)
    run.attention(3, 2)                                   # A = softmax(Q_h K_hᵀ / √d_QK), (N_Q, N_KV)
    run.show(3, 2)                                        # the same map as a figure (PNG/SVG inline)
    model.run(prompt, ablate=[(3, 2)], kernel="relu")     # experiments: core/intervention.py
    run.attribute(); model.heads(); model.patch(clean, corrupt, target=" Paris", against=" Rome")

A `Run` holds one decoder (decode.Decoder, or the encoder / encoder-decoder
driver from families.make_decoder) and reads every number from its immutable
Trace: the same trace the app draws, the `trace` command saves and the session
file rebuilds. Importing this module imports neither torch nor Qt; torch is
imported by `load()`.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from explorer.core import files
from explorer.core.errors import ContextOverflowError, ExplorerError
from explorer.views import trace_views
from explorer.views.token_text import warn_left_out

if TYPE_CHECKING:
    from explorer.core.attribution import Attribution
    from explorer.core.head_scores import HeadScores
    from explorer.core.patching import PatchMap
    from explorer.core.runtime import LoadedModel
    from explorer.core.sampling import Sampling
    from explorer.core.trace import ModelInfo, Trace
    from explorer.plots import AttentionFigure

Prompt = str | Sequence[int] | np.ndarray


def load(name_or_path: str | Path, device: str = "cpu", dtype: str = "float32") -> Model:
    """Open a model: a catalog name (`python -m explorer models`), an HF folder or a .gguf file.

    `device` is cpu, cuda, cuda:N, mps or auto; `dtype` float32, bfloat16 or float16.
    Raises ModelLoadError (an ExplorerError) naming the file and the problem.
    """
    from explorer.core.runtime import load_model
    from explorer.core.store import resolve

    path = resolve(name_or_path)
    reference = str(name_or_path) if Path(str(name_or_path)) != path else str(path.resolve())
    return Model(load_model(path, device=device, dtype=dtype), reference, device, dtype)


class Model:
    """A loaded model (runtime.LoadedModel) ready to run prompts."""

    def __init__(self, loaded: LoadedModel, reference: str | None = None, device: str = "cpu",
                 dtype: str = "float32") -> None:
        self.loaded = loaded
        self.reference = reference or (str(loaded.path) if loaded.path else loaded.name)
        self.device, self.dtype = device, dtype

    @property
    def info(self) -> ModelInfo:
        """Sizes and kinds: n_layers, n_heads (N_Q), n_kv_heads (N_KV), d_model, d_qk, attention, ..."""
        return self.loaded.info

    @property
    def name(self) -> str:
        return self.loaded.name

    def __repr__(self) -> str:
        i = self.info
        return (f"<explorer.Model {i.name}: {i.family}, {i.attention}, {i.n_layers} layers, "
                f"{i.n_heads}/{i.n_kv_heads} heads, {i.n_params:,} parameters on {i.device}>")

    def encode(self, prompt: Prompt) -> np.ndarray:
        """The ids of a prompt: a string through the model's tokenizer, or ids as given: (T,) int64."""
        if isinstance(prompt, str):
            if self.loaded.tokenizer is None:
                raise ExplorerError(f"{self.name} has no tokenizer: give the prompt as token ids")
            tokens = self.loaded.tokenizer.encode(prompt)
            warn_left_out(tokens.spans, tokens.source)
            ids = np.asarray(tokens.ids, dtype=np.int64)
        else:
            ids = np.asarray(prompt, dtype=np.int64).reshape(-1)
        if ids.size == 0:
            raise ExplorerError(f"the prompt {prompt!r} gives no tokens: write some text")
        return ids

    def run(self, prompt: Prompt, steps: int = 0, sampling: Sampling | None = None,
            ablate: Sequence[tuple[int, int]] = (), kernel: str | None = None,
            kernel_layers: Sequence[int] | None = None, kernel_temperature: float = 1.0) -> Run:
        """Prefill `prompt` and decode `steps` tokens, recording every step.

        Greedy unless `sampling` says otherwise. `ablate` zeroes the outputs O_h = A_h V_h of the
        given (layer, head) pairs before W^O; `kernel` ("exp", "linear" or "relu") replaces f_κ of
        A = Z⁻¹ f_κ(S) in `kernel_layers` (every layer when None), "exp" at `kernel_temperature` τ
        being exp(S / τ): exactly `trace --ablate L.H --kernel K --kernel-layers ... --temperature τ`.
        """
        from explorer.core.sampling import Sampling

        ids = self.encode(prompt)
        steps = int(steps)
        if steps < 0:
            raise ExplorerError(f"steps={steps} must not be negative")
        if steps and not _can_generate(self.loaded):
            from explorer.core.encoder import NO_DECODING

            raise ExplorerError(f"steps={steps}: {NO_DECODING}; use steps=0")
        context = self.loaded.config.max_positions
        if len(ids) + steps > context:
            raise ContextOverflowError(
                f"the prompt has {len(ids)} tokens; with {steps} steps it exceeds the model's context of {context}")
        intervention = _intervention(ablate, kernel, kernel_layers, kernel_temperature, self.info)
        decoder = _decoder(self.loaded, sampling or Sampling(), len(ids) + steps, intervention)
        decoder.prefill(ids)
        for _ in range(steps):
            decoder.step()
        text = prompt if isinstance(prompt, str) else None
        return Run(self, decoder, text, intervention)

    def attribute(self, prompt: Prompt, position: int | None = None, token_id: int | None = None) -> Attribution:
        """Split the logit of `token_id` (default: the top prediction) after `position` (default: the last)
        into embed + Σ heads + Σ MLPs + rest, the final norm frozen there: explorer.core.attribution."""
        from explorer.core.attribution import attribute

        return attribute(self.loaded, self.encode(prompt), position, token_id)

    def patch(self, clean: Prompt, corrupt: Prompt, target: str | int, against: str | int | None = None,
              site: str = "head", metric: str = "logit_diff", progress=None, cancel=None) -> PatchMap:
        """Activation patching: each site ("head": O_h, (L, H); "resid": the residual entering a layer at one
        position, (L, T)) taken from the clean run into the corrupted one, and logit(target) − logit(against)
        (or "prob", p(target)) read at the last position. Targets are one token each: " Paris" or an id."""
        from explorer.core import patching

        clean_ids, corrupt_ids = patching.check_prompts(self.encode(clean), self.encode(corrupt))
        return patching.patch_map(self.loaded, clean_ids, corrupt_ids, self._token(target, "target"),
                                  None if against is None else self._token(against, "against"), site, metric,
                                  progress=progress, cancel=cancel)

    def _token(self, token: str | int, what: str) -> int:
        if isinstance(token, str):
            from explorer.core.patching import single_token

            return single_token(self.loaded.tokenizer, token, what)
        return int(token)

    def heads(self, ids: Sequence[int] | None = None, repeat: int = 2, seed: int = 0) -> HeadScores:
        """Previous-token, induction and sink scores of every head, (L, H) each, on `ids` repeated
        `repeat` times (random ids of the vocabulary when None): explorer.core.head_scores."""
        from explorer.core.head_scores import score_heads

        return score_heads(self.loaded, None if ids is None else np.asarray(ids, dtype=np.int64), repeat, seed=seed)


def _can_generate(loaded) -> bool:
    from explorer.core.families import can_generate

    return can_generate(loaded)


def _intervention(ablate: Sequence[tuple[int, int]], kernel: str | None, kernel_layers: Sequence[int] | None,
                  kernel_temperature: float, info: ModelInfo):
    """The core's Intervention (explorer.core.intervention) for the API's keywords, None for the model as it is:
    `ablate` zeroes O_h of each (layer, head); `kernel` replaces f_κ in `kernel_layers` (None: every layer)."""
    if not ablate and kernel is None:
        if kernel_layers is not None:
            raise ExplorerError("kernel_layers needs a kernel: give kernel='relu', 'linear' or 'exp'")
        return None
    from explorer.core.intervention import HeadAblation, Intervention, Kernel, KernelChoice

    try:
        ablations = tuple(HeadAblation(int(layer), int(head)) for layer, head in ablate)
    except (TypeError, ValueError):
        raise ExplorerError(f"ablate={list(ablate)!r} must list (layer, head) pairs, e.g. [(3, 2)]") from None
    layers = None if kernel_layers is None else tuple(int(layer) for layer in kernel_layers)
    kernels = () if kernel is None else (KernelChoice(Kernel(kernel, kernel_temperature), layers),)
    intervention = Intervention(kernels=kernels, ablations=ablations)
    intervention.check(info.n_layers, info.n_heads)
    return intervention


def _decoder(loaded, sampling: Sampling, capacity: int, intervention=None):
    """The recording driver of the model (families.make_decoder), recording in float32."""
    from explorer.core.decode import RecordOptions
    from explorer.core.families import make_decoder

    decoder = make_decoder(loaded, RecordOptions(dtype="float32"), sampling, capacity=capacity)
    decoder.set_intervention(intervention)
    return decoder


class Run:
    """One prompt through one model, step by step: the ids, logits, attention maps and cache bytes.

    The arrays are read from `trace`, the immutable Trace the app draws; step(), back() and
    force() move the run on and every property then describes the new trace.
    """

    def __init__(self, model: Model, decoder: Any, prompt: str | None = None, intervention=None) -> None:
        self.model, self.decoder, self.prompt = model, decoder, prompt
        self.intervention = intervention
        self._memo: tuple[Any, dict] = (None, {})

    def __repr__(self) -> str:
        return f"<explorer.Run {self.model.name}: {self.trace.n_tokens} tokens, {self.trace.n_steps} steps>"

    # ----- what was computed -------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        """The typed Trace of the run so far (explorer.core.trace): what the app's panels draw."""
        return self.decoder.trace

    @property
    def ids(self) -> np.ndarray:
        """The prompt's ids, then the generated ones: (T,) int64."""
        return self.trace.token_ids.astype(np.int64)

    @property
    def tokens(self) -> list[str]:
        """Display strings of `ids`: spaces shown as ␣, undecodable bytes as <0x..>."""
        return list(self.trace.token_text)

    @property
    def logits(self) -> np.ndarray:
        """The logits h_t W_U predicted at every position t: (T, V) float32."""
        if not getattr(self.decoder, "can_generate", True):
            from explorer.core.encoder import NO_DECODING

            raise ExplorerError(f"no logits: {NO_DECODING}")
        return self._cached("logits", lambda: np.stack(
            [self.decoder.logits_at(p) for p in range(self.trace.n_tokens)]).astype(np.float32))

    @property
    def kv_bytes(self) -> np.ndarray:
        """KV-cache bytes in use after each position, all layers: (T,) int64."""
        cache = self.decoder.kv_cache
        return self._cached("kv_bytes", lambda: np.array(
            [sum(cache.bytes_in_use(t + 1)) for t in range(self.trace.n_tokens)], dtype=np.int64))

    def attention(self, layer: int, head: int, step: int | None = None, kind: str = "self") -> np.ndarray:
        """A_h of one head: (N_Q, N_KV) float32 rows of queries, columns of keys, 0 where masked.

        `step` draws the map as it was after that step (0 = the prefill; default the last).
        `kind`: "self", or for encoder-decoders "cross" (target × source) and "encoder".
        """
        view = self._view(layer, head, step, kind)
        return view.trace.attention_head(layer, head, view.step, view.cross).astype(np.float32)

    def _view(self, layer: int, head: int, step: int | None, kind: str) -> trace_views.View:
        kinds = trace_views.kinds_of(self.trace.model)
        if kind not in kinds:
            raise ExplorerError(f"attention kind {kind!r} is not one of {', '.join(kinds)} for {self.model.name}")
        view = trace_views.view(self.trace, kind, step)
        info = view.trace.model
        if not 0 <= layer < info.n_layers:
            raise ExplorerError(f"layer {layer} does not exist: the model has layers 0 to {info.n_layers - 1}")
        if not 0 <= head < info.n_heads:
            raise ExplorerError(f"head {head} does not exist: layers have heads 0 to {info.n_heads - 1}")
        if step is not None and not 0 <= step < self.trace.n_steps:
            raise ExplorerError(f"step {step} does not exist: the run has steps 0 to {self.trace.n_steps - 1}")
        return view

    def _cached(self, name: str, compute):
        trace, values = self._memo
        if trace is not self.trace:
            values = {}
            self._memo = (self.trace, values)
        if name not in values:
            values[name] = compute()
        return values[name]

    # ----- moving on ---------------------------------------------------------------------
    def step(self, n: int = 1) -> Run:
        """Feed the chosen next token and record `n` more decoding steps."""
        for _ in range(n):
            self.decoder.step()
        return self

    def back(self) -> Run:
        """Undo the last decoding step (the prompt stays); the KV cache forgets its tokens."""
        self.decoder.back()
        return self

    def force(self, token_id: int) -> Run:
        """Take `token_id` as the next token instead of the chosen one; the next step() feeds it."""
        self.decoder.force(int(token_id))
        return self

    def attribute(self, position: int | None = None, token_id: int | None = None) -> Attribution:
        """Model.attribute on this run's ids: who wrote the logit of `token_id` after `position`."""
        return self.model.attribute(self.ids, position, token_id)

    # ----- files -------------------------------------------------------------------------
    def arrays(self, layers: Sequence[int] | None = None, attention: bool = True) -> dict[str, np.ndarray]:
        """The arrays of the `trace` command's .npz (see explorer/tools/trace_cmd.py for the list):
        the attention maps of `layers` only (None: every layer), or none of them and no tokens."""
        return dict(self._array_items(layers, attention))

    def _array_items(self, layers: Sequence[int] | None, attention: bool):
        """(name, array) one at a time: a layer's maps are made (on demand, from Q and K) only when asked."""
        trace = self.trace
        yield "ids", self.ids
        if attention:
            yield "tokens", np.array(trace.token_text, dtype=str)
        yield "kv_bytes", self.kv_bytes
        if getattr(self.decoder, "can_generate", True):
            yield "logits", self.logits
        chosen = range(trace.model.n_layers) if layers is None else [int(layer) for layer in layers]
        for layer in chosen if attention else ():
            yield f"attn_{layer}", trace.attention(layer, keep=False).astype(np.float32, copy=False)
        if trace.model.is_encoder_decoder:
            yield "source_ids", trace.encoder.token_ids.astype(np.int64)
            for layer in chosen if attention else ():
                yield f"enc_attn_{layer}", trace.encoder.layers[layer].attn.weights.astype(np.float32)
                yield f"cross_attn_{layer}", trace.attention(layer, cross=True, keep=False).astype(np.float32, copy=False)
        if self.intervention is not None and not self.intervention.is_empty:
            yield "intervention", np.array(json.dumps(self.intervention.to_json()))

    def save(self, path: str | Path, layers: Sequence[int] | None = None, attention: bool = True) -> Path:
        """Write `arrays(layers, attention)` to an .npz file (the format of np.savez, no pickles), one array
        at a time, as `python -m explorer trace` does."""
        import zipfile

        if layers is not None:
            for layer in layers:
                if not 0 <= int(layer) < self.trace.model.n_layers:
                    raise ExplorerError(f"layer {layer} does not exist: the model has layers 0 to "
                                        f"{self.trace.model.n_layers - 1}")
        def write(temporary: str) -> None:      # atomically: a failed write leaves the old file whole
            with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
                for name, array in self._array_items(layers, attention):
                    with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)

        return files.write_atomic(path, write)

    def save_session(self, path: str | Path) -> Path:
        """Write the app's session file (File → Open session… rebuilds this very trace)."""
        from explorer.app.state.session_state import SamplingSettings, SessionState, save

        if self.intervention is not None and not self.intervention.is_empty:
            raise ExplorerError("a session file does not hold this run's ablation or kernel, so the app would "
                                "show another trace: save the run with run.save(path) instead")
        sampling = getattr(self.decoder, "sampling", None)
        settings = SamplingSettings(**{k: getattr(sampling, k) for k in ("temperature", "top_k", "top_p", "seed")}) \
            if sampling is not None else SamplingSettings()
        prompt = self.prompt
        if prompt is None and self.model.loaded.tokenizer is not None:
            prompt = self.model.loaded.tokenizer.decode(trace_views.started_ids(self.trace))
        state = SessionState.of(self.model.reference, prompt or "", settings, self.trace,
                                device=self.model.device, dtype=self.model.dtype)
        save(path, state)
        return Path(path)

    # ----- figures -----------------------------------------------------------------------
    def show(self, layer: int, head: int, step: int | None = None, kind: str = "self",
             values: str = "weights", log: bool = False) -> AttentionFigure:
        """One head's map with token labels and a colour bar; shows inline in Jupyter (PNG and SVG)."""
        from explorer.plots import head_figure

        view = self._view(layer, head, step, kind)
        return head_figure(view, layer, head, values, log, self.model.name)

    def show_grid(self, step: int | None = None, kind: str = "self", values: str = "weights",
                  log: bool = False) -> AttentionFigure:
        """Every layer × head map as one mosaic (block maxima past 64 tokens), as the app's grid."""
        from explorer.plots import grid_figure

        view = self._view(0, 0, step, kind)
        return grid_figure(view, values, log, self.model.name)


def kv_table(path: str | Path, tokens: int | None = None, dtype: str = "float32",
             ranks: Sequence[int] | None = None) -> list[dict]:
    """The KV lab's table for a model folder, config.json or .gguf (dimensions only, no weights):
    one dict per variant (MHA, GQA, MQA, MLA ranks) with its kv_heads, bytes_per_token and bytes_total."""
    from explorer.core import kv_variants as kv
    from explorer.core.loaders.config_file import read_config

    config, _ = read_config(str(path))
    shape = kv.cache_shape(config, source=str(path))
    rows = kv.compare(shape, tokens=tokens, dtype=dtype, ranks=None if ranks is None else list(ranks))
    return [row.as_json() for row in rows]
