"""Show the work: one attention weight A[i, j] recomputed, step by step, from the trace's own tensors.

    q_i = RoPE_{p_i}(q_i^pre),  k_j = RoPE_{p_j}(k_j^pre)      pair (a, b) turns by p * theta_m
    s_ij = <q_i, k_j> * scale  ->  c tanh(s_ij / c)  (softcap, where the model has one)
    S_ij = s_ij where the mask lets i see j, else -inf
    A_ij = f_kappa(S_ij) / Z_i,   Z_i = sum_j f_kappa(S_ij) over the keys i sees (masked: f = 0)
         exp:    exp(S_ij / tau - m_i),  m_i = max_j S_ij / tau   (the model's softmax: tau = 1)
         relu:   max(0, S_ij);   linear: S_ij
    y_i  = sum_j A_ij v_j                                         (the head's output O_h at row i)

The kernel is the one the record says the model used (AttentionRecord.kernel: the model's softmax, or an
experiment's kernel in that layer), formed by kernel.py as the engine forms it; the softcap belongs to exp alone.
Every figure is computed here in float64 from the recorded float32 arrays, and compared with what
the model recorded (`deltas`): the largest |difference| says how exactly the screen explains the model.
Under an experiment that replaced a head's O_h (zero or mean ablation, kept out by "only these heads",
patched) y_i = A_i V is what the head would have given, not what the model went on with: the derivation
says how it was replaced (`replaced_by`), keeps the output the model used (`used_output`) and does not
count their difference as a mismatch.
For MLA the keys are the expansion [c_KV W_h^UK ; k_R] the trace records; c_KV and k_R are shown beside.
Imports numpy, the trace and the intervention values only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from explorer.core import kernel as kernels
from explorer.core import trace_rows
from explorer.core.intervention import SOFTMAX, Intervention, Kernel
from explorer.core.trace import RopeAngles, Trace

REPLACED = "replaced by an experiment (an ablation, \"only these heads\" or a patch)"   # when the how is unknown


@dataclass(frozen=True)
class Rotation:
    """The RoPE turn of one vector: the pairs of dims it turns, their angles, and the vector before."""

    pre: np.ndarray              # (d_qk,) before RoPE
    angles: np.ndarray           # (d_R/2,) p * theta_m, radians
    pairs: np.ndarray            # (d_R/2, 2) the dims (a, b) each angle turns
    factor: float                # YaRN's attention factor on cos and sin (1 elsewhere)


@dataclass(frozen=True)
class CellDerivation:
    """A[i, j] of (layer, head) as of step `upto_step`, derived; every array float64."""

    layer: int
    head: int
    kv_head: int
    row: int                     # i, the query row in the trace (its position, for a decoder)
    column: int                  # j, the key column (its position)
    upto_step: int
    q: np.ndarray                # (d_qk,) q_i as multiplied (after RoPE)
    k: np.ndarray                # (d_qk,) k_j
    q_rotation: Rotation | None  # None without RoPE
    k_rotation: Rotation | None
    products: np.ndarray         # (d_qk,) q_i * k_j per dim
    dot: float                   # <q_i, k_j>
    scale: float                 # the factor the model used (1/sqrt(d), Gemma's query_pre_attn_scalar, ...)
    softcap: float | None        # the softcap applied (None where the model has none or the kernel is not exp)
    score: float                 # s_ij after scale and softcap
    visible: bool                # the mask entry
    row_scores: np.ndarray       # (n_kv,) S_i with -inf where masked
    row_max: float | None        # m_i = max_j S_ij / tau under exp; None for kernels that shift nothing
    row_f: np.ndarray            # (n_kv,) f_kappa(S_ij): exp(S_ij / tau - m_i), max(0, S_ij) or S_ij; 0 where masked
    z: float                     # Z_i = sum_j f_kappa(S_ij)
    weight: float                # A_ij recomputed
    recorded_weight: float       # A_ij as the model recorded it
    output: np.ndarray           # (d_v,) y_i = sum_j A_ij v_j
    top_terms: tuple[tuple[int, float, float], ...]   # (j, A_ij, ||A_ij v_j||), largest first
    latent: np.ndarray | None = None      # (d_c,) MLA's c_KV of key j
    k_rope: np.ndarray | None = None      # (d_R,) MLA's decoupled k_R of key j
    head_write: np.ndarray | None = None  # (d_model,) y_i W^O_h, what the head adds (given W^O_h)
    absorbed_query: np.ndarray | None = None  # (d_c,) MLA: W_h^UK q_i^nope, the query folded into latent space
    deltas: dict[str, float] = field(default_factory=dict)  # max |recomputed - recorded| per quantity
    replaced_by: str | None = None        # how an experiment replaced O_h at row i ("zero ablation"); None: it did not
    used_output: np.ndarray | None = None  # (d_v,) O_h at row i as the model went on with it, where replaced
    replaced_gap: float = 0.0             # max |y_i - used_output|: what the replacement changed, not an error
    kernel: Kernel = SOFTMAX              # f_kappa the model used in this layer (the record's)

    @property
    def conditioning(self) -> float:
        """kappa_i = sum_j |f_ij| / |Z_i|: 1 for exp and relu; above 1 where linear's signed Z_i cancels, and the
        model's float32 rounding of Z_i shows in A_i that many times larger (inf where Z_i = 0)."""
        return float(np.abs(self.row_f).sum() / abs(self.z)) if self.z != 0 else float("inf")

    @property
    def max_delta(self) -> float:
        return max(self.deltas.values()) if self.deltas else 0.0


def rotate(pre: np.ndarray, position: int, angles: RopeAngles) -> tuple[np.ndarray, Rotation]:
    """RoPE_p(x): each pair (a, b) -> f (a cos t - b sin t, b cos t + a sin t), t = p theta_m (Su et al. 2021)."""
    x = pre.astype(np.float64)
    half = angles.inv_freq.shape[0]
    theta = float(position) * angles.inv_freq.astype(np.float64)                 # (d_R/2,)
    index = np.arange(half)
    if angles.interleave:
        pairs = np.stack([angles.start + 2 * index, angles.start + 2 * index + 1], axis=1)
    else:
        pairs = np.stack([angles.start + index, angles.start + half + index], axis=1)
    a, b = x[pairs[:, 0]], x[pairs[:, 1]]
    out = x.copy()
    out[pairs[:, 0]] = angles.factor * (a * np.cos(theta) - b * np.sin(theta))
    out[pairs[:, 1]] = angles.factor * (b * np.cos(theta) + a * np.sin(theta))
    return out, Rotation(pre=x, angles=theta, pairs=pairs, factor=angles.factor)


def _record_of(trace: Trace, layer: int):
    return trace.steps[0].layers[layer].attn


def _positions(trace: Trace, upto_step: int) -> np.ndarray:
    return np.concatenate([s.positions for s in trace.steps[: upto_step + 1]])


def _rotations(trace: Trace, layer: int, head: int, kv_head: int, row: int, column: int, upto_step: int):
    """The RoPE turns of q_i and k_j (None, None without RoPE), and how far they land from the record."""
    angles = trace.rope[layer] if layer < len(trace.rope) else None
    q_pre = trace.q_pre_rope(layer, head, upto_step)
    if angles is None or q_pre is None:
        return None, None, {}
    positions = _positions(trace, upto_step)
    k_pre = trace.k_pre_rope(layer, kv_head, upto_step)
    q_turned, q_rotation = rotate(q_pre[row], int(positions[row]), angles)
    k_turned, k_rotation = rotate(k_pre[column], int(positions[column]), angles)
    q = trace.q(layer, head, upto_step)[row].astype(np.float64)
    k = trace.k(layer, kv_head, upto_step)[column].astype(np.float64)
    return q_rotation, k_rotation, {"q after RoPE": float(np.abs(q_turned - q).max()),
                                    "k after RoPE": float(np.abs(k_turned - k).max())}


def f_row(scores: np.ndarray, visible: np.ndarray, kernel: Kernel) -> tuple[np.ndarray, float | None]:
    """f_kappa(S_i) over the visible keys, 0 where masked, and the shift m_i it subtracts (None: none),
    by the kernel the engine forms A with (kernel.terms):

        exp: exp(S_ij / tau - m_i), m_i = max_j S_ij / tau  (Z_i^-1 cancels the shift);
        relu: max(0, S_ij);  linear: S_ij.                                        scores: (n_kv,) float64
    """
    f, shift = kernels.terms(scores.copy(), ~visible, kernel)                  # a copy: S_i is shown as well
    return f, None if shift is None else float(shift.item())


def kernel_formula(kernel: Kernel) -> str:
    """A_ij as the kernel forms it, written as panel formulas are ("A_{ij} = relu(S_{ij}) / Z_i"; base.formula_html
    sets the scripts); exp names its temperature."""
    if kernel.name == "linear":
        return "A_{ij} = S_{ij} / Z_i"
    if kernel.name == "relu":
        return "A_{ij} = relu(S_{ij}) / Z_i"
    if kernel.temperature != 1.0:
        return f"A_{{ij}} = exp(S_{{ij}}/τ − max_j S_{{ij}}/τ) / Z_i, τ = {kernel.temperature:g}"
    return "A_{ij} = exp(S_{ij} − max_j S_{ij}) / Z_i"


def row_scores(q: np.ndarray, keys: np.ndarray, scale: float, softcap: float | None,
               visible: np.ndarray) -> np.ndarray:
    """S_i = softcap(<q_i, k_j> scale) where visible, -inf elsewhere: (n_kv,) float64."""
    return np.where(visible, kernels.softcapped(keys @ q * scale, softcap), -np.inf)


def derive_cell(trace: Trace, layer: int, head: int, row: int, column: int, upto_step: int | None = None,
                n_terms: int = 5, w_o: np.ndarray | None = None, w_uk: np.ndarray | None = None,
                intervention: Intervention | None = None) -> CellDerivation:
    """Recompute A[row, column] of (layer, head) and y_row from the trace, with every intermediate.

    Given the head's weights, also y_i W^O_h (w_o: (d_v, d_model)) and, for MLA, the absorbed score
    (W_h^UK q^nope) . c_KV + q^R . k_R against the expanded <q, k> (w_uk: (d_c, d_nope)). Given the
    intervention the trace ran under, a head it replaced is named by how (`replaced_by`).
    """
    upto = len(trace.steps) - 1 if upto_step is None else upto_step
    kv_head = trace.kv_head_of(head)
    record = _record_of(trace, layer)
    kernel = record.kernel
    softcap = kernels.kernel_softcap(record.softcap, kernel)                   # exp's alone
    q = trace.q(layer, head, upto)[row].astype(np.float64)                      # (d_qk,)
    keys = trace.k(layer, kv_head, upto).astype(np.float64)                     # (T_kv, d_qk)
    visible = trace_rows.mask_row(trace, layer, row, upto)[: keys.shape[0]]    # (T_kv,): row i alone
    scores = row_scores(q, keys, record.scale, softcap, visible)
    f, row_max = f_row(scores, visible, kernel)                                # f_kappa(S_i): (T_kv,)
    z = float(f.sum())
    weights = f / z if z != 0 else np.zeros_like(f)                             # A_i: (T_kv,)
    recorded = trace.attention_row(layer, head, row, upto)[: keys.shape[0]].astype(np.float64)   # A_i as recorded
    q_rotation, k_rotation, deltas = _rotations(trace, layer, head, kv_head, row, column, upto)
    deltas["A row"] = float(np.abs(weights - recorded).max())
    output, top_terms, used = _output(trace, layer, head, row, upto, weights, n_terms, recorded)
    replaced_by = replacement(trace, layer, head, row, upto, intervention)
    gap = float(np.abs(output - used).max())
    if replaced_by is None:
        deltas["y = sum_j A_ij v_j"] = gap
    latent, k_rope = _latent(trace, layer, column, upto)
    if k_rope is not None:                                                      # k_j = [c_KV W^UK ; k_R]
        deltas["k_R in k_j"] = float(np.abs(keys[column, -k_rope.shape[0]:] - k_rope).max())
    products = q * keys[column]
    absorbed = None
    if w_uk is not None and latent is not None:                                # S = (q W^UK) c_KV + q_R k_R
        absorbed = w_uk.astype(np.float64) @ q[: w_uk.shape[1]]                 # (d_c,)
        folded = absorbed @ latent + q[w_uk.shape[1]:] @ k_rope
        deltas["absorbed = expanded"] = abs(float(folded - products.sum()))
    return CellDerivation(
        layer=layer, head=head, kv_head=kv_head, row=row, column=column, upto_step=upto, q=q, k=keys[column],
        q_rotation=q_rotation, k_rotation=k_rotation, products=products, dot=float(products.sum()),
        scale=float(record.scale), softcap=softcap, score=float(scores[column]) if visible[column]
        else _score(float(products.sum()), record.scale, softcap), visible=bool(visible[column]),
        row_scores=scores, row_max=row_max, row_f=f, z=z, weight=float(weights[column]), kernel=kernel,
        recorded_weight=float(recorded[column]), output=output, top_terms=top_terms,
        latent=latent, k_rope=k_rope, deltas=deltas, absorbed_query=absorbed,
        head_write=None if w_o is None else (output if replaced_by is None else used) @ w_o.astype(np.float64),
        replaced_by=replaced_by, used_output=None if replaced_by is None else used,
        replaced_gap=0.0 if replaced_by is None else gap)


def _score(dot: float, scale: float, softcap: float | None) -> float:
    """s = <q, k> scale, then c tanh(s / c) where the model softcaps (for a masked cell, shown anyway)."""
    return float(kernels.softcapped(dot * scale, softcap))


def _output(trace: Trace, layer: int, head: int, row: int, upto: int, weights: np.ndarray, n_terms: int,
            recorded_weights: np.ndarray):
    """y_i = sum_j A_ij v_j, its n_terms largest terms (j, A_ij, ||A_ij v_j||), and O_h at row i as the model
    went on with it (trace_rows.head_out_row: the recorded A_i V_h, or what an experiment replaced it by)."""
    values = trace.v(layer, trace.kv_head_of(head), upto).astype(np.float64)   # (T_kv, d_v)
    terms = weights[:, None] * values                                           # A_ij v_j: (T_kv, d_v)
    output = terms.sum(axis=0)
    sizes = np.linalg.norm(terms, axis=1)
    order = np.argsort(-sizes)[:n_terms]
    recorded = trace_rows.head_out_row(trace, layer, head, row, upto, recorded_weights)
    return output, tuple((int(j), float(weights[j]), float(sizes[j])) for j in order), recorded


def _latent(trace: Trace, layer: int, column: int, upto: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """MLA's c_KV and k_R of key `column`, from the step that fed it (None for other attention kinds)."""
    offset = 0
    for step in trace.steps[: upto + 1]:
        record = step.layers[layer].attn
        if column < offset + step.n_new:
            if record.latent is None:
                return None, None
            return (record.latent[column - offset].astype(np.float64),
                    record.k_rope[column - offset].astype(np.float64))
        offset += step.n_new
    return None, None


def replacement(trace: Trace, layer: int, head: int, row: int, upto: int,
                intervention: Intervention | None = None) -> str | None:
    """How an experiment replaced O_h of (layer, head) at query row `row`, in words; None where O_h = A_h V_h.

    The record says which heads were replaced (AttentionRecord.edited_heads); `intervention`, the one
    the trace ran under, says how. A record that stores every head's O_h does not list them: there the
    intervention alone tells.
    """
    record, _ = trace_rows.record_of_row(trace, layer, row, upto)
    position = int(_positions(trace, upto)[row])
    how = None if intervention is None else replaced_how(intervention, layer, head, trace.model.n_heads, position)
    if record.head_out is not None and not record.edited_heads:
        return how or None
    if head not in record.edited_heads or how == "":
        return None
    return how or REPLACED


def replaced_how(intervention: Intervention, layer: int, head: int, n_heads: int, position: int) -> str | None:
    """"zero ablation", "mean ablation", ... for head (layer, head) at `position` of the self-attention;
    "" for a head patched at other positions only; None where the intervention leaves it alone."""
    modes = {a.head: a.mode for a in intervention.ablations if a.layer == layer and a.where == "self"}
    if head in modes:
        return _ablation(modes[head])
    keep = intervention.keep_only
    if keep is not None and keep.where == "self" and (layer, head) not in set(map(tuple, keep.heads)) \
            and 0 <= head < n_heads:
        return f"{_ablation(keep.mode)}, kept out by \"only these heads\""
    patches = [p for p in intervention.head_patches if p.layer == layer and p.head == head and p.where == "self"]
    if any(p.start <= position < p.start + len(p.values) for p in patches):
        return "patched with another run's output"
    return "" if patches else None


def _ablation(mode: str) -> str:
    return "zero ablation (O_h = 0)" if mode == "zero" else "mean ablation (O_h = its mean over the prompt)"

