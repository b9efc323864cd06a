"""The Attention panel's header: the formula of the map shown, with its live sizes (N_Q, N_KV, d_QK), the
kernel f_κ an experiment put in softmax's place, and which side each of an encoder-decoder's maps reads."""
from __future__ import annotations

from explorer.app.panels.base import dims
from explorer.views.words import plural

WEIGHTS = "A = softmax(Q_h K_hᵀ / √d_{QK})"
SCORES = "S = Q_h K_hᵀ · scale"


def header(trace, kind: str, values: str, layer: int, head: int, shape: tuple[int, int], mean: bool) -> str:
    """The header of the map shown: one head's, or the mean of the layer's heads (`mean`)."""
    if mean:
        return mean_formula(trace, values, layer, shape)
    return attention_formula(trace, kind, values, layer, head, shape)


def mean_formula(trace, values: str, layer: int, shape: tuple[int, int]) -> str:
    """The header of the mean of a layer's heads."""
    symbol = "S̄ = (1/N_Q) Σ_h S_h" if values == "scores" else "Ā = (1/N_Q) Σ_h A_h"
    return f"{symbol} ∈ {dims(*shape)}   layer {layer}, the mean of its N_Q = {trace.model.n_heads} heads"


def kernel_of(trace, kind: str, layer: int):
    """The kernel f_κ the shown map was computed with (intervention.Kernel), or None if unknown."""
    step = trace.encoder if kind == "encoder" else (trace.steps[-1] if trace.steps else None)
    if step is None or layer >= len(step.layers):
        return None
    record = step.layers[layer].cross if kind == "cross" else step.layers[layer].attn
    return getattr(record, "kernel", None)


def attention_formula(trace, kind: str, values: str, layer: int, head: int, shape: tuple[int, int]) -> str:
    """The header: the formula of the map shown with its live sizes; cross-attention names X^Q and C. N_Q and
    N_KV count heads, as everywhere in the app (the model map, the KV cache's bytes); T_Q and T_KV count the
    query and key tokens, which differ only across the two sides of an encoder-decoder."""
    info, (n_q, n_kv) = trace.model, shape
    what = SCORES if values == "scores" else WEIGHTS
    kernel = kernel_of(trace, kind, layer)
    if values != "scores" and kernel is not None and not kernel.is_model_softmax:     # an Experiments kernel
        what = kernel.formula().replace("S", "Q_h K_hᵀ · scale") + " (intervened)"
    if kind == "cross":
        return (f"cross-attention {what} ∈ {dims(n_q, n_kv)},  Q_h = X^Q W_h^Q with X^Q the decoder (target),"
                f"  K_h = C W_h^K, V_h = C W_h^V with X^K = X^V = C the encoder output (source):"
                f"  T_Q = {plural(n_q, 'target token')} {'≠' if n_q != n_kv else 'and'} T_{{KV}} = "
                f"{plural(n_kv, 'source token')};   layer {layer}, head {head} of N_Q = {info.n_heads},"
                f" d_{{QK}} = {info.d_qk}")
    prefix = {"encoder": "encoder self-attention (full mask) ", "self": ""}.get(kind, "")
    if kind == "self" and info.is_encoder_decoder:
        prefix = "decoder self-attention (causal mask) "
    if info.attention == "mla":     # every head's K and V come up from one latent: no K/V head is shared
        return (f"{prefix}{what} ∈ {dims(n_q, n_kv)}   layer {layer}, head {head}, N_Q = {info.n_heads},"
                f" K_h = [c_{{KV}} W_h^{{UK}} ; k_R] and V_h = c_{{KV}} W_h^{{UV}} from the latent c_{{KV}}"
                f" (d_c = {info.mla_rank}), d_{{QK}} = {info.d_qk}")
    return (f"{prefix}{what} ∈ {dims(n_q, n_kv)}   layer {layer}, head {head} (K/V head {trace.kv_head_of(head)}),"
            f" N_Q = {info.n_heads}, N_{{KV}} = {info.n_kv_heads}, d_{{QK}} = {info.d_qk}")
