"""The answers the Learn path's "Try this" questions get from the trace shown: a question in
resources/learn/stops.json may name an answer kind, and its "Show the answer" link computes it here (numpy over
the trace, the person's own text or the stop's) and says which layer and head, and which panel, show it.

    previous_token : the head whose rows put most weight on the token just before,
                     argmax over (ℓ, h) of mean_{i=1..T-1} A^{ℓ,h}[i, i-1]   (a "previous-token head")
    first_token    : in one layer, the head whose rows put most weight on the first token,
                     argmax over h of mean_{i=0..T-1} A^{ℓ,h}[i, 0]          (an "attention sink")
    negative_weight: in one layer, the most negative weight min over (h, i, j) of A^{ℓ,h}[i, j] and where it is:
                     under the linear kernel A = Z⁻¹ S a weight may be negative while its row still sums to 1
    cross_source   : in one layer of an encoder–decoder, for each target token the decoder wrote, the source token its
                     query weighs most, argmax_j of mean over h of the cross-attention C^{ℓ,h}[i, j] (i: the row
                     whose next token is the one written)
    top_key        : in the layer and head shown, the key the last query scores highest, argmax_j S[T-1, j] with
                     S = q_i k_j / √d_QK (the Q / K / V panel's rows), against the key its row of A weighs most
    kv_bytes       : what one more token costs the model shown, L · (its cache's numbers per token and layer) · bytes,
                     from explorer.core.kv_variants (2 · N_KV · d_h for MHA/GQA/MQA, d_c + d_R for MLA)
    text           : the answer is the question's own "text" (a fact of the algebra, the same for any model)

A is the self-attention of the decoder (or the encoder alone), every query row of the trace, prefill and
decoding steps. A trace longer than MAX_TOKENS is not read whole (T × T per head): the answer says so.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core import kv_variants
from explorer.core.trace import Trace

MAX_TOKENS = 512         # L·N_Q heads of T × T read on the window's thread: kept to a moment
KINDS = ("previous_token", "first_token", "negative_weight", "cross_source", "top_key", "kv_bytes", "text")


@dataclass(frozen=True)
class Answer:
    text: str                        # one or two sentences, in the panels' notation
    layer: int | None = None         # what to select; None leaves the selection as it is
    head: int | None = None
    panel: str | None = None         # the dock to bring forward (its object name)


def answer(kind: str, trace: Trace | None, layer: int | None = None, text: str = "", head: int = 0) -> Answer:
    """The answer of `kind` on `trace` (layer: the layer a question names; head: the head shown)."""
    if kind == "text":
        return Answer(text)
    if kind not in KINDS:
        raise ValueError(f"unknown answer kind {kind!r}; known: {', '.join(KINDS)}")
    if kind == "kv_bytes" and trace is not None:
        return kv_bytes(trace)
    if trace is None or not trace.steps:
        return Answer("Run a prompt first (Show me runs this stop's): the answer is read from its attention.")
    if trace.n_tokens < 2:
        return Answer("The prompt has one token: there is no token before it. Type a longer prompt and run it.")
    if trace.n_tokens > MAX_TOKENS:
        return Answer(f"The text has {trace.n_tokens:,} tokens; the answer reads every row of every head, so it "
                      f"needs {MAX_TOKENS:,} or fewer. Show me runs a short prompt.")
    if kind == "previous_token":
        return previous_token_head(trace)
    layer = min(int(layer or 0), trace.model.n_layers - 1)
    if kind == "negative_weight":
        return negative_weight(trace, layer)
    if kind == "cross_source":
        return cross_source(trace, layer)
    if kind == "top_key":
        return top_key(trace, layer, min(int(head), trace.model.n_heads - 1))
    return first_token_head(trace, layer)


def previous_token_share(weights: np.ndarray) -> float:
    """mean_{i=1..T-1} A[i, i-1]: the share of a row's weight on the token just before."""
    return float(np.diagonal(weights, offset=-1).mean())


def previous_token_head(trace: Trace) -> Answer:
    """The head with the largest previous-token share, and how large it is against the layer's mean."""
    shares = np.array([[previous_token_share(trace.attention_head(layer, head))
                        for head in range(trace.model.n_heads)] for layer in range(trace.model.n_layers)])
    layer, head = (int(i) for i in np.unravel_index(int(np.argmax(shares)), shares.shape))
    return Answer(f"Layer {layer}, head {head}: on average {shares[layer, head]:.0%} of each row's weight is on the "
                  f"token just before (the line just below the diagonal); the mean head puts {shares.mean():.0%} "
                  "there.", layer, head, "attention")


def first_token_head(trace: Trace, layer: int) -> Answer:
    """The head of `layer` with the largest share of its rows' weight on the first token."""
    shares = np.array([float(trace.attention_head(layer, head)[:, 0].mean()) for head in range(trace.model.n_heads)])
    head = int(np.argmax(shares))
    others = (f"; the other heads of the layer put {np.delete(shares, head).mean():.0%} there" if len(shares) > 1
              else "")
    return Answer(f"Layer {layer}, head {head}: on average {shares[head]:.0%} of each row's weight is on the first "
                  f"token (the first column){others}.", layer, head, "attention")


def negative_weight(trace: Trace, layer: int) -> Answer:
    """The most negative weight of `layer`'s heads, with its row's sum; or that there is none."""
    weights = np.stack([trace.attention_head(layer, head) for head in range(trace.model.n_heads)])
    head, row, column = (int(i) for i in np.unravel_index(int(np.argmin(weights)), weights.shape))
    smallest = float(weights[head, row, column])
    if smallest >= 0:
        return Answer(f"No: every weight of layer {layer} is 0 or more (the smallest is {smallest:.3g}). With "
                      "exp every f_κ(S) is positive; set the kernel box to linear and look again.", layer, head,
                      "attention")
    tokens = trace.token_text
    count = int((weights < 0).sum())
    return Answer(f"Yes: layer {layer}, head {head}, A[{row}, {column}] = {smallest:.3f} (query {tokens[row]!r}, key "
                  f"{tokens[column]!r}), and its row still sums to {float(weights[head, row].sum()):.3f}: Z divides by "
                  f"the row sum of S, whatever its sign. {count} of the layer's weights are negative.",
                  layer, head, "attention")


def top_key(trace: Trace, layer: int, head: int) -> Answer:
    """The key the last query scores highest in (layer, head), and the key its row of A weighs most."""
    scores = trace.scores(layer, head)[-1]                  # (N_KV,): S[T-1, :], the hidden keys at -inf
    weights = trace.attention_head(layer, head)[-1]
    tokens, scored, weighed = trace.token_text, int(np.argmax(scores)), int(np.argmax(weights))
    query = len(weights) - 1
    said = (f"Layer {layer}, head {head}: the last query, {tokens[query]!r} (row {query}), scores key {scored} "
            f"{tokens[scored]!r} highest, S[{query}, {scored}] = {float(scores[scored]):.3f}; its row of A weighs ")
    if scored == weighed:
        return Answer(said + f"that key most too, A[{query}, {scored}] = {float(weights[scored]):.3f}: exp keeps "
                      "the order of the scores, and Z⁻¹ divides the whole row by one number.", layer, head, "attention")
    most = float(weights[weighed])
    return Answer(said + f"key {weighed} {tokens[weighed]!r} most, A[{query}, {weighed}] = {most:.3f}: the kernel "
                  "is not exp here (see the kernel box), and it does not keep the scores' order.",
                  layer, head, "attention")


def cross_source(trace: Trace, layer: int) -> Answer:
    """For each target token written, the source token the decoder's query before it weighs most in `layer`
    (heads averaged), and that weight."""
    encoder = getattr(trace, "encoder", None)
    if encoder is None or trace.steps[0].layers[layer].cross is None:
        return Answer("This model has no cross-attention: Show me opens the translator, an encoder–decoder.")
    weights = trace.attention(layer, cross=True).mean(axis=0)        # (T, S): row i writes token i + 1
    target, source = trace.token_text, encoder.token_text
    if len(target) < 2:
        return Answer("The decoder has written nothing yet: press Step (Space) and ask again.")
    peaks = [int(j) for j in np.argmax(weights[:-1], axis=1)]
    looks = "; ".join(f"writing {target[i + 1]!r}, {source[j]!r} ({weights[i, j]:.0%})" for i, j in enumerate(peaks))
    same = sum(bare(target[i + 1]) == bare(source[j]) for i, j in enumerate(peaks))
    return Answer(f"Layer {layer}, the heads' mean weight: {looks}. {same} of the {len(peaks)} target tokens look "
                  "most at the source token with their own text (the brightest cell of each row of the "
                  "cross-attention map).", layer, None, "attention")


def bare(token: str) -> str:
    """A token's text without the space the tokens table draws as ␣."""
    return token.replace("␣", " ").strip()


def kv_bytes(trace: Trace) -> Answer:
    """Bytes one more token costs the shown model's cache, over all its layers, with the sum written out."""
    info = trace.model
    per_layer = kv_variants.bytes_per_token_per_layer(info)
    dtype = kv_variants.cache_dtype(info)
    width = kv_variants.dtype_bytes(dtype)
    if info.mla_rank:
        numbers = f"d_c + d_R = {info.mla_rank} + {info.mla_rope_dim}"
    elif info.d_qk == info.d_v:
        numbers = f"2 · N_KV · d_h = 2 · {info.n_kv_heads} · {info.d_v}"
    else:
        numbers = f"N_KV · (d_QK + d_v) = {info.n_kv_heads} · ({info.d_qk} + {info.d_v})"
    return Answer(f"{info.n_layers * per_layer:,} bytes: L = {info.n_layers} layers × ({numbers} = "
                  f"{per_layer // width} numbers) × {width} bytes ({dtype}). The KV cache panel's 'per token' says "
                  "the same.",
                  None, None, "kv_cache")
