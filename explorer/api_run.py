"""A Run: one prompt through one model, step by step, read from its immutable Trace (see explorer/api.py).

Its activations by name (residual(l), attn_out(l), ..., cache) are computed on demand: api_activations.py.
"""
from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from explorer import api_checks as checks
from explorer.api_activations import NORMS, ActivationCache, Activations
from explorer.core import files
from explorer.core.errors import ExplorerError
from explorer.plots import grid_figure, head_figure
from explorer.views import trace_views
from explorer.views.session_state import SamplingSettings, SessionState, save

if TYPE_CHECKING:
    from explorer.api import Model
    from explorer.core.trace import Trace
    from explorer.plots import AttentionFigure


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
        self._needs_logits()
        return self._cached("logits", self._all_logits)

    def _needs_logits(self) -> None:
        if not getattr(self.decoder, "can_generate", True):
            from explorer.core.encoder import NO_DECODING  # torch, loaded on first use

            raise ExplorerError(f"no logits: {NO_DECODING}")

    @property
    def last_logits(self) -> np.ndarray:
        """The logits after the last position, `logits[-1]`: (V,) float32, without the product h W_U over the
        other positions (a batch's come from its pass, which read W_U once for every prompt's last row)."""
        self._needs_logits()
        if getattr(self.decoder, "pending", False):                # a batch's: its trace is not made yet
            return self._last_logits()
        return self._cached("last_logits", self._last_logits)

    def _last_logits(self) -> np.ndarray:
        kept = getattr(self.decoder, "last_logits", None)          # packed.PackedDecoder: its prefill's, from its pass
        if kept is not None and (getattr(self.decoder, "pending", False) or self.trace.n_steps == 1):
            return kept.float().cpu().numpy()[-1]
        return np.asarray(self.decoder.logits_at(self.trace.n_tokens - 1), dtype=np.float32)

    def logit_diff(self, target: str | int, against: str | int, position: int | None = None) -> float:
        """logits[position, target] − logits[position, against] (default: the last position; targets are one
        token each, " Mary" or an id), from the final state at the position and the two rows of W_U only: no
        product over the vocabulary, so a batch recorded with record="logits" and read for its differences
        costs its pass and nothing more."""
        self._needs_logits()
        ids = [self.model._token(target, "target"), self.model._token(against, "against")]
        state, position = self._final_state(position)
        if state is None:                                          # a driver that keeps no final states here
            logits = self.decoder.logits_at(position)
            return float(logits[ids[0]] - logits[ids[1]])
        import torch

        from explorer.core.patching import token_logits

        with torch.inference_mode():
            two = token_logits(self.model.loaded.model, state, ids).float().cpu().numpy()[0]     # (2,)
        return float(two[0] - two[1])

    def _final_state(self, position: int | None):
        """(h_L after the final norm at `position` (1, d) where this run's decoder keeps it, else None; the
        position checked, the last when None)."""
        from explorer.core.decode import Decoder  # torch, loaded on first use

        pending = getattr(self.decoder, "pending", False)              # a batch's: its pass's rows, no trace yet
        n = len(self.decoder.final_states) if pending else self.trace.n_tokens
        position = checks.index(position, "position", n, allow_none=True)
        position = n - 1 if position is None else position
        if pending:
            return self.decoder.final_states[position: position + 1], position
        hidden = getattr(self.decoder, "_hidden", None)
        if not isinstance(self.decoder, Decoder) or hidden is None or len(hidden) != self.trace.n_steps:
            return None, position
        offset = position
        for rows in hidden:                                            # each recorded step's rows, in order
            if offset < len(rows):
                return rows[offset: offset + 1], position
            offset -= len(rows)
        return None, position

    def _all_logits(self) -> np.ndarray:
        """(T, V): one product h W_U per recorded step (a prefill's rows at once; a batch's prefills read theirs
        from their pass's one product, packed.SharedLogits) where the decoder keeps its steps' final states,
        else position by position."""
        hidden = getattr(self.decoder, "_hidden", None)
        if hidden is None or len(hidden) != self.trace.n_steps:
            return np.stack([self.decoder.logits_at(p) for p in range(self.trace.n_tokens)]).astype(np.float32)
        import torch  # torch, loaded on first use

        model = self.model.loaded.model
        step_logits = getattr(self.decoder, "step_logits", None)      # a batch's runs share one product
        with torch.inference_mode():
            if step_logits is not None:
                return torch.cat([step_logits(step) for step in range(len(hidden))]).cpu().numpy()
            return torch.cat([model.logits(h).float() for h in hidden]).cpu().numpy()

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
        self._needs_layers("attention maps")
        for value, what in ((layer, "layer"), (head, "head"), (step, "step")):
            if (value is not None or what != "step") and (isinstance(value, bool)
                                                           or not isinstance(value, (int, np.integer))):
                raise ExplorerError(f"{what} must be an integer, not {value!r}")
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

    def _needs_layers(self, what: str) -> None:
        """Refuse, in one sentence, to read `what` from a run recorded without its layers (record="logits")."""
        steps = self.trace.steps
        if steps and not steps[0].layers and self.trace.model.n_layers:
            raise ExplorerError(f"this run was recorded with record='logits', which keeps no {what}: "
                                f"run the prompt again with record='trace'")

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
        for _ in range(checks.whole(n, "n")):
            self.decoder.step()
        return self

    def back(self) -> Run:
        """Undo the last decoding step (the prompt stays); the KV cache forgets its tokens."""
        self.decoder.back()
        return self

    def force(self, token_id: int) -> Run:
        """Take `token_id` as the next token instead of the chosen one; the next step() feeds it."""
        self.decoder.force(checks.whole(token_id, "token_id"))          # never rounded: force(2.7) forced 2
        return self

    def attribute(self, position: int | None = None, token_id: int | None = None, target=None, against=None):
        """Model.attribute on this run's ids, under this run's intervention: who wrote the logit of
        `token_id` (or logit(target) − logit(against)) after `position`."""
        return self.model.attribute(self.ids, position, token_id, target, against, self.intervention)

    # ----- activations by name (api_activations.py) ---------------------------------------
    def residual(self, layer: int) -> np.ndarray:
        """h_l, the residual stream leaving block `layer`: (T, d_model) float32."""
        return self._activation(layer, "resid_post")

    def attn_out(self, layer: int) -> np.ndarray:
        """a_l, what the attention sublayer of block `layer` adds to the residual: (T, d_model) float32."""
        return self._activation(layer, "attn_out")

    def mlp_out(self, layer: int) -> np.ndarray:
        """f_l, what the FFN (or MoE) sublayer of block `layer` adds to the residual: (T, d_model) float32."""
        return self._activation(layer, "mlp_out")

    def mlp_hidden(self, layer: int) -> np.ndarray:
        """act(x W_in) (gated: act(x W_gate) * x W_up), what the FFN's output matrix reads: (T, d_ff) float32."""
        return self._activation(layer, "mlp_post")

    def norm_scale(self, layer: int, which: str = "attn") -> np.ndarray:
        """The divisor sqrt(mean(x²) + ε) (LayerNorm: sqrt(var(x) + ε)) of the norm before block `layer`'s
        "attn" or "mlp" sublayer, or of the "final" norm (layer ignored): (T,) float32."""
        if which not in NORMS:
            raise ExplorerError(f"norm {which!r} is not one of {', '.join(NORMS)}")
        return self._activation(-1 if which == "final" else layer, NORMS[which])

    @property
    def cache(self) -> ActivationCache:
        """The activations under TransformerLens's hook names, numpy: cache["blocks.3.hook_resid_post"]."""
        return ActivationCache(self)

    def activations(self, names: Sequence[str] | None = None, as_torch: bool = False) -> ActivationCache:
        """`cache`, as torch tensors when `as_torch`; `names` (hook names, or True: the residual stream's names
        of every layer) are computed now, in one pass."""
        cache = ActivationCache(self, as_torch)
        if names is not None:
            self._activations().fill(_wanted(names, self.trace.model.n_layers))
        return cache

    def _activation(self, layer: int, name: str) -> np.ndarray:
        n_layers = self.trace.model.n_layers
        if layer != -1 or not name.endswith("final"):
            if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < n_layers:
                raise ExplorerError(f"layer {layer!r} does not exist: the model has layers 0 to {n_layers - 1}")
        return self._activations().get(int(layer), name)

    def _activations(self) -> Activations:
        return self._cached("activations", lambda: Activations(self))

    # ----- files -------------------------------------------------------------------------
    def arrays(self, layers: Sequence[int] | None = None, attention: bool = True) -> dict[str, np.ndarray]:
        """The arrays of the `trace` command's .npz (see explorer/tools/trace_cmd.py for the list):
        the attention maps of `layers` only (None: every layer), or none of them and no tokens."""
        return dict(self._array_items(layers, attention))

    def _array_items(self, layers: Sequence[int] | None, attention: bool):
        """(name, array) one at a time: a layer's maps are made (on demand, from Q and K) only when asked."""
        trace = self.trace
        if attention:
            self._needs_layers("attention maps (save it with attention=False)")
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
                cross = trace.attention(layer, cross=True, keep=False)
                yield f"cross_attn_{layer}", cross.astype(np.float32, copy=False)
        if self.intervention is not None and not self.intervention.is_empty:
            yield "intervention", np.array(json.dumps(self.intervention.to_json()))

    def save(self, path: str | Path, layers: Sequence[int] | None = None, attention: bool = True) -> Path:
        """Write `arrays(layers, attention)` to an .npz file (the format of np.savez, no pickles), one array
        at a time, as `python -m explorer trace` does."""

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

        view = self._view(layer, head, step, kind)
        return head_figure(view, layer, head, values, log, self.model.name)

    def show_grid(self, step: int | None = None, kind: str = "self", values: str = "weights",
                  log: bool = False) -> AttentionFigure:
        """Every layer × head map as one mosaic (block maxima past 64 tokens), as the app's grid."""

        view = self._view(0, 0, step, kind)
        return grid_figure(view, values, log, self.model.name)


def _wanted(names: Sequence[str], n_layers: int) -> dict[int, set[str]]:
    """{layer: core names} of TransformerLens hook names (api_activations.parse); patterns need no pass."""
    from explorer.api_activations import parse  # torch, loaded on first use
    from explorer.core.activations import RESIDUAL_NAMES

    if names is True:                                   # every residual-stream name of every layer
        return {layer: set(RESIDUAL_NAMES) for layer in range(n_layers)}
    if isinstance(names, str):
        names = [names]
    wanted: dict[int, set[str]] = {}
    for name in names:
        layer, core_name = parse(name, n_layers)
        if core_name != "pattern":
            wanted.setdefault(layer, set()).add(core_name)
    return wanted
