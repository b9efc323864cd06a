"""Direct logit attribution: which parts of the model wrote the logit of token N at position P.

The residual stream at P is a sum of what each part added (pre-norm blocks):

    h_L = h_0 + sum_l (a_l + f_l),    a_l = sum_h O_h W^O_h + b^O     (W^O_h: head h's columns of W^O)

and the logit is z_N = W_U[N] . Norm(h_L). With the final norm's scale frozen at its value for
this position (RMSNorm: 1/rms(h_L); LayerNorm: 1/sigma(h_L), its mean subtraction is linear),
Norm is linear, Norm(x) = g * centre(x) + b, and z_N splits exactly:

    z_N = u . h_0 + sum_{l,h} u . O_h W^O_h + sum_l u . f_l + rest,   u = centre(g * W_U[N])

where `rest` holds the biases (b^O of each layer, the final norm's b). Gemma's sandwich norms put
a norm after each sublayer, a_l = Norm_l(sum_h O_h W^O_h): freezing its scale too keeps the heads'
split exact ("sandwich" decomposition; the FFN sublayers are attributed as added, norm included).
Gemma's final softcap c tanh(z / c) is not linear: the pre-cap logit z is attributed, and
`capped_logit` says what the softcap made of it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.core import kernel as kernels
from explorer.core.capture import StepCapture
from explorer.core.errors import ExplorerError
from explorer.core.intervention_run import as_run
from explorer.core.kv_cache import KVCache
from explorer.core.logit_lens import row_capture
from explorer.core.model import LayerNorm, OffsetRMSNorm, RMSNorm
from explorer.core.weights_view import attention_module

PRE_NORM = "pre-norm: every head through the final norm, its scale frozen at this position"
SANDWICH = ("sandwich: every head through its layer's post-attention norm and the final norm, both scales "
            "frozen at this position; each FFN sublayer as added to the residual (its post-norm included)")


@dataclass(frozen=True)
class Attribution:
    """z_N = embed + heads.sum() + mlp.sum() + rest, exactly up to float rounding (float64 parts)."""

    position: int
    token_id: int
    logit: float                 # the pre-softcap logit z_N the model computed
    embed: float                 # u . h_0 (token embedding, scaled, plus learned positions)
    heads: np.ndarray            # (L, N_Q)  u . O_h W^O_h
    mlp: np.ndarray              # (L,)      u . f_l  (FFN or MoE sublayer)
    rest: float                  # biases: b^O per layer, the norms' b
    decomposition: str           # PRE_NORM or SANDWICH
    capped_logit: float | None = None   # c tanh(z / c) where the model softcaps its logits

    def total(self) -> float:
        return float(self.embed + self.heads.sum() + self.mlp.sum() + self.rest)

    def as_json(self) -> dict:
        return {"position": self.position, "token_id": self.token_id, "logit": self.logit, "embed": self.embed,
                "heads": self.heads.tolist(), "mlp": self.mlp.tolist(), "rest": self.rest,
                "decomposition": self.decomposition, "capped_logit": self.capped_logit}

    def largest(self, k: int = 12) -> list[tuple[str, float]]:
        """The k parts of largest |contribution|, named "embed", "L3.H5", "MLP 3", "rest"."""
        return largest_parts(self, k)


def largest_parts(parts, k: int) -> list[tuple[str, float]]:
    """The k parts of an attribution (anything with embed, rest, mlp (L,) and heads (L, H)) of largest
    |contribution|, named "embed", "L3.H5", "MLP 3", "rest"."""
    named = [("embed", float(parts.embed)), ("rest", float(parts.rest))]
    named += [(f"MLP {layer}", float(value)) for layer, value in enumerate(parts.mlp)]
    named += [(f"L{layer}.H{head}", float(parts.heads[layer, head]))
              for layer in range(parts.heads.shape[0]) for head in range(parts.heads.shape[1])]
    return sorted(named, key=lambda part: -abs(part[1]))[:k]


@dataclass(frozen=True)
class ResidualStream:
    """The residual stream at one position, layer by layer (L,), and the logit lens read from it."""

    position: int
    attn_norms: np.ndarray       # (L,) ||a_l||
    ffn_norms: np.ndarray        # (L,) ||f_l||
    residual_norms: np.ndarray   # (L,) ||h_l|| after block l
    lens_ids: np.ndarray         # (L, k) top tokens of softmax(Norm(h_l) W_U)
    lens_probs: np.ndarray       # (L, k)


@dataclass(frozen=True)
class FrozenNorm:
    """Norm(x) = gain * centre(x) + bias, the norm made linear by freezing its scale at one x."""

    gain: torch.Tensor           # (d,) float64: w / rms(x), (1 + w) / rms(x) or w / sigma(x)
    centred: bool                # LayerNorm subtracts the mean
    bias: torch.Tensor | None    # (d,) float64

    def read(self, u: torch.Tensor) -> tuple[torch.Tensor, float]:
        """The readout u_in with u . Norm(x') = u_in . x' + const, for any part x' of x: (u_in, const)."""
        u_in = self.gain * u
        if self.centred:
            u_in = u_in - u_in.mean()
        return u_in, float(u @ self.bias) if self.bias is not None else 0.0


def freeze(norm, x: torch.Tensor) -> FrozenNorm:
    """`norm` (RMSNorm, Gemma's OffsetRMSNorm or LayerNorm) with its scale fixed at x (d,), in float64."""
    x = x.double()
    weight = norm.weight.double()
    if isinstance(norm, LayerNorm):
        centred = x - x.mean()
        sigma = torch.sqrt((centred * centred).mean() + norm.eps)
        bias = norm.bias.double() if norm.bias is not None else None
        return FrozenNorm(gain=weight / sigma, centred=True, bias=bias)
    rms = torch.sqrt((x * x).mean() + norm.eps)
    gain = (1.0 + weight) if isinstance(norm, OffsetRMSNorm) else weight
    assert isinstance(norm, RMSNorm), type(norm)
    return FrozenNorm(gain=gain / rms, centred=False, bias=None)


def check_request(loaded, ids: np.ndarray, position: int | None, token_id: int | None) -> int:
    """The position to attribute (default: the last), or an ExplorerError naming the bad value."""
    if loaded.info.is_encoder_only or loaded.info.is_encoder_decoder:
        raise ExplorerError(f"{loaded.name} is not a decoder-only model: attribution reads its next-token logits")
    if ids.size == 0:
        raise ExplorerError("the prompt is empty: give at least one token")
    position = ids.size - 1 if position is None else int(position)
    if not 0 <= position < ids.size:
        raise ExplorerError(f"position {position} is outside the prompt's {ids.size} tokens (0 to {ids.size - 1})")
    vocab = loaded.config.vocab_size
    if token_id is not None and not 0 <= int(token_id) < vocab:
        raise ExplorerError(f"token id {token_id} is outside the vocabulary of {vocab}")
    return position


class AttributionCancelled(ExplorerError):
    """The person cancelled (or the app quit) while the model ran for an attribution."""


class Checkpoints(StepCapture):
    """A capture that raises AttributionCancelled after any attention and any block once `cancel` (None, a
    callable or a threading.Event) is set, so a pass stops within the sublayer it is in (and the prefix run,
    in chunks of PREFIX_CHUNK tokens, within one chunk of one sublayer). It hands what the model gives it on
    to `kept`, or keeps nothing (the uncaptured prefix run: no weights, so the same fused kernel runs)."""

    def __init__(self, cancel, kept: StepCapture | None = None):
        super().__init__(0, weights=kept is not None and kept.weights)
        self.cancel, self.kept = cancel, kept

    def stop_if_cancelled(self) -> None:
        cancel = self.cancel
        if cancel is not None and (cancel.is_set() if hasattr(cancel, "is_set") else cancel()):
            raise AttributionCancelled("The attribution was cancelled.")

    def attention(self, layer: int, record, cross: bool = False) -> None:
        if self.kept is not None:
            self.kept.attention(layer, record, cross)
        self.stop_if_cancelled()

    def block(self, layer: int, **tensors) -> None:
        if self.kept is not None:
            self.kept.block(layer, **tensors)
        self.stop_if_cancelled()


# The prefix run goes through the KV cache this many tokens at a time: whole, one layer of an 8,000-token
# prompt is seconds of work that a Cancel had to wait out; a chunk's layer is a small part of that.
PREFIX_CHUNK = 512


def run_last(loaded, ids: np.ndarray, cancel=None) -> tuple[StepCapture, torch.Tensor]:
    """The capture of the last of `ids` and its final-normed state (1, d); AttributionCancelled within one
    sublayer of one chunk of `cancel` being set.

    The earlier tokens go through first into a KV cache, uncaptured, PREFIX_CHUNK at a time (each chunk's
    queries see the keys of the chunks before it in the cache, as a decoding step does), so that a long
    prompt costs one row of attention weights per layer, not a (T, T) map per head.
    """

    model = loaded.model
    weight = model.embed.weight
    cache = KVCache(loaded.config, int(ids.size), weight.dtype, weight.device)
    capture = StepCapture(loaded.config.n_layers)
    tokens = torch.as_tensor(ids, device=weight.device)
    checkpoints = Checkpoints(cancel)
    checkpoints.stop_if_cancelled()
    last = ids.size - 1
    with torch.inference_mode():
        for start in range(0, last, PREFIX_CHUNK):
            end = min(start + PREFIX_CHUNK, last)
            model(tokens[start:end], np.arange(start, end), cache, checkpoints)
        hidden = model(tokens[last:], np.arange(last, ids.size), cache, Checkpoints(cancel, capture))
    return capture, hidden


def reads_cache(decoder, loaded, ids: np.ndarray, position: int) -> bool:
    """Whether `decoder` ran these very ids up to `position` with `loaded` and no intervention, so its
    KV cache holds what the prefix run would compute (a decoder-only Decoder; None: no decoder)."""
    if decoder is None or getattr(decoder, "loaded", None) is not loaded or not hasattr(decoder, "kv_cache"):
        return False
    if getattr(decoder, "_intervened", None) is not None or position >= decoder.trace.n_tokens:
        return False
    return bool(np.array_equal(decoder.trace.token_ids[: position + 1], ids[: position + 1]))


def row_at(loaded, ids: np.ndarray, position: int, decoder=None, cancel=None) -> StepCapture:
    """The capture whose last row is `position` of `ids`: one row through the decoder's KV cache where it
    holds this prompt (logit_lens.row_capture, O(L (p d + params))), else the prefix run (run_last)."""
    if reads_cache(decoder, loaded, ids, position):
        with torch.inference_mode():
            return row_capture(decoder, position)
    return run_last(loaded, ids[: position + 1], cancel)[0]


def capture_at(loaded, ids: np.ndarray, position: int, intervention=None, cancel=None) -> StepCapture:
    """A capture whose last row is `position` of `ids`: the prefix run (run_last) for the model as it is;
    under an intervention, one pass over all of `ids` (so a mean ablation takes its mean over the
    whole prompt, as Model.run does), cut to the rows up to `position`."""

    run = as_run(intervention)
    if run is None:
        return run_last(loaded, ids[: position + 1], cancel)[0]
    model = loaded.model
    capture = StepCapture(loaded.config.n_layers, weights=False)
    with torch.inference_mode():
        model(torch.as_tensor(ids, device=model.embed.weight.device), np.arange(ids.size), None,
              Checkpoints(cancel, capture), run)
    for layer in capture.layers:
        for name in ("residual_in", "attn_out", "ffn_out", "residual"):
            setattr(layer, name, getattr(layer, name)[: position + 1])
        layer.attn.head_out = layer.attn.head_out[:, : position + 1]
    return capture


def attribute(loaded, ids, position: int | None = None, token_id: int | None = None,
              intervention=None, cancel=None) -> Attribution:
    """Split the logit of `token_id` (default: the top prediction) after `position` (default: the last),
    under `intervention` (None: the model as it is); AttributionCancelled within a layer of `cancel` set."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    position = check_request(loaded, ids, position, token_id)
    return attribute_capture(loaded, capture_at(loaded, ids, position, intervention, cancel), position, token_id)


def attribute_capture(loaded, capture: StepCapture, position: int, token_id: int | None) -> Attribution:
    """The attribution of the logit of `token_id` (None: the top one) at the last row of `capture`."""
    model = loaded.model
    with torch.inference_mode():
        last = capture.layers[-1].residual[-1:]
        logits = model.lm_head(model.norm(last))[0].double()                   # z: (V,) pre-softcap
        token = int(logits.argmax()) if token_id is None else int(token_id)
        final = freeze(model.norm, capture.layers[-1].residual[-1])
        u, rest = final.read(model.lm_head.weight[token].double())             # u: (d,)
        heads, mlp = [], []
        for block, layer in zip(model.layers, capture.layers):
            contributions, bias_part = _head_parts(block, layer, u)
            heads.append(contributions)
            rest += bias_part
            mlp.append(float(u @ layer.ffn_out[-1].double()))
        cap = loaded.config.final_softcap
        z = float(logits[token])
        return Attribution(
            position=position, token_id=token, logit=z, embed=float(u @ capture.layers[0].residual_in[-1].double()),
            heads=np.array(heads, dtype=np.float64), mlp=np.array(mlp, dtype=np.float64), rest=rest,
            decomposition=SANDWICH if loaded.config.sandwich_norm else PRE_NORM,
            capped_logit=float(kernels.softcapped(z, cap)) if cap else None)


def _head_parts(block, layer, u: torch.Tensor) -> tuple[list[float], float]:
    """u . O_h W^O_h for each head of one layer at the last position, and the biases' part."""
    wo = block.attn.wo
    heads_out = layer.attn.head_out[:, -1].double()                            # O_h: (N_Q, d_v)
    n_heads, d_v = heads_out.shape
    columns = wo.weight.double().view(-1, n_heads, d_v)                         # W^O: (d, N_Q, d_v)
    per_head = torch.einsum("dhv,hv->hd", columns, heads_out)                  # O_h W^O_h: (N_Q, d)
    bias = wo.bias.double() if wo.bias is not None else None
    u_in, constant = u, 0.0
    if block.post_attn_norm is not None:                                       # a = Norm(sum_h O_h W^O_h + b)
        y = per_head.sum(0) + (bias if bias is not None else 0.0)
        u_in, constant = freeze(block.post_attn_norm, y).read(u)
    contributions = (per_head @ u_in).tolist()
    return contributions, constant + (float(u_in @ bias) if bias is not None else 0.0)


def residual_stream(loaded, ids, position: int | None = None, k: int = 5, decoder=None,
                    cancel=None, intervention=None) -> ResidualStream:
    """What each layer adds at `position`, the norms, and the logit lens softmax(Norm(h_l) W_U) top k, under
    `intervention` (None: the model as it is); the model as it is is read through `decoder`'s KV cache where
    it ran these ids (row_at)."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    position = check_request(loaded, ids, position, None)
    capture = (row_at(loaded, ids, position, decoder, cancel) if as_run(intervention) is None
               else capture_at(loaded, ids, position, intervention, cancel))
    model = loaded.model
    with torch.inference_mode():
        def norms(name: str) -> np.ndarray:
            rows = torch.stack([getattr(layer, name)[-1].float() for layer in capture.layers])   # (L, d)
            return torch.linalg.vector_norm(rows, dim=-1).cpu().numpy()
        residuals = torch.stack([layer.residual[-1] for layer in capture.layers])                 # (L, d)
        probs = torch.softmax(model.logits(model.norm(residuals)).float(), dim=-1)                 # (L, V)
        top_probs, top_ids = probs.topk(k, dim=-1)
    return ResidualStream(position=position, attn_norms=norms("attn_out"), ffn_norms=norms("ffn_out"),
                          residual_norms=norms("residual"), lens_ids=top_ids.cpu().numpy().astype(np.int64),
                          lens_probs=top_probs.cpu().numpy())


def output_columns(loaded, layer: int, head: int) -> np.ndarray:
    """W^O_h: the columns of W^O that head h writes through, as (d_v, d_model) float32 (y_h W^O_h is its part)."""

    info = loaded.info
    if not 0 <= head < info.n_heads:
        raise ExplorerError(f"head {head} is not one of the {info.n_heads} heads of {info.name}")
    wo = attention_module(loaded.model, layer).wo.weight                          # (d_model, N_Q d_v)
    with torch.inference_mode():
        return wo[:, head * info.d_v:(head + 1) * info.d_v].T.detach().to("cpu", torch.float32).numpy().copy()
