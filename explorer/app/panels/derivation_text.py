"""Show the work's derivation as rich text: the walk from q_i and k_j to A_ij = f(S_ij) / Z_i and y_i = sum_j A_ij v_j,
each figure with its max |delta| against the record, the kernel's steps, a head an experiment replaced, and the
per-dimension products (explorer.core.derivation computes them; panels/derivation.py shows this beside its plots).
"""
from __future__ import annotations

import html

import numpy as np

from explorer.app.panels.panel_words import formula_html
from explorer.app.widgets.text_helpers import readable
from explorer.core import derivation

ILL_CONDITIONED = 10.0       # kappa_i above which the panel says linear's Z_i cancels (float32 rounding grows)
SHOWN_DIMS = 64              # rows of the per-dimension table (the rest is summed, not listed)


def _vector(values: np.ndarray, n: int = 6) -> str:
    shown = ", ".join(f"{v:+.3f}" for v in values[:n])
    return f"[{shown}{', …' if values.size > n else ''}]  ({values.size} dims)"


def derivation_html(cell: derivation.CellDerivation, token_text) -> str:
    """The walk from q_i and k_j to A_ij and y_i, as rich text for the panel (and tests)."""
    i, j = cell.row, cell.column
    lines = [f"<b>A[{i}, {j}]</b>: query {i} '{html.escape(readable(token_text[i]))}' → key {j} "
             f"'{html.escape(readable(token_text[j]))}', layer {cell.layer}, head {cell.head}"
             + ("" if cell.latent is not None else f" (K/V head {cell.kv_head})")     # MLA: its own K, V (below)
             + f", as of step {cell.upto_step}"]
    if cell.q_rotation is not None:
        rotation = cell.q_rotation
        lines.append(f"q<sub>i</sub> before RoPE {_vector(rotation.pre)}<br>k<sub>j</sub> before RoPE "
                     f"{_vector(cell.k_rotation.pre)}<br>angles p·θ<sub>m</sub>: query "
                     f"{_vector(rotation.angles, 4)} rad, key {_vector(cell.k_rotation.angles, 4)} rad"
                     + (f", factor {rotation.factor:.4g}" if rotation.factor != 1.0 else ""))
    lines.append(f"q<sub>i</sub> {_vector(cell.q)}<br>k<sub>j</sub> {_vector(cell.k)}")
    if cell.absorbed_query is not None:
        lines.append(f"MLA absorbed: W<sup>UK</sup> q<sub>i</sub><sup>nope</sup> = {_vector(cell.absorbed_query)}; "
                     "(W<sup>UK</sup> q)·c<sub>KV</sub> + q<sub>R</sub>·k<sub>R</sub> = ⟨q<sub>i</sub>, k<sub>j</sub>⟩ "
                     f"expanded, |Δ| = {cell.deltas.get('absorbed = expanded', 0.0):.1e}")
    if cell.latent is not None:
        lines.append(f"MLA: k<sub>j</sub> = [c<sub>KV</sub> W<sup>UK</sup> ; k<sub>R</sub>], c<sub>KV</sub> "
                     f"{_vector(cell.latent)}, k<sub>R</sub> {_vector(cell.k_rope)}")
    lines.append(f"⟨q<sub>i</sub>, k<sub>j</sub>⟩ = Σ<sub>d</sub> q<sub>id</sub> k<sub>jd</sub> = {cell.dot:.6g}; "
                 f"× scale {cell.scale:.6g} = {cell.dot * cell.scale:.6g}"
                 + (f"; softcap {cell.softcap:g}·tanh(s/{cell.softcap:g}) = {cell.score:.6g}" if cell.softcap else ""))
    lines.append(f"mask: key {j} is "
                 + ("visible" if cell.visible else "hidden (S = −∞, f = 0)") + f" to query {i}")
    lines.extend(kernel_lines(cell))
    terms = "".join(f"<tr><td>{jj}</td><td>'{html.escape(readable(token_text[jj]))}'</td><td>{a:.4f}</td>"
                    f"<td>{size:.4f}</td></tr>" for jj, a, size in cell.top_terms)
    if cell.replaced_by is not None:
        lines.append(replaced_html(cell))
    lines.append(f"y<sub>i</sub> = Σ<sub>j</sub> A<sub>ij</sub> v<sub>j</sub> = {_vector(cell.output)}"
                 + (" (what the head would have given)" if cell.replaced_by else "") + "; "
                 "its largest terms:<table cellspacing=4><tr><th>j</th><th>token</th><th>A<sub>ij</sub></th>"
                 f"<th>‖A<sub>ij</sub> v<sub>j</sub>‖</th></tr>{terms}</table>"
                 + _written(cell))
    deltas = "".join(f"<tr><td>{html.escape(name)}</td><td>{value:.2e}</td></tr>"
                     for name, value in cell.deltas.items())
    lines.append(f"recomputed against the record, max |Δ|:<table cellspacing=4>{deltas}</table>")
    lines.append(_dims_table(cell))
    return "<br><br>".join(lines)


def kernel_lines(cell: derivation.CellDerivation) -> list[str]:
    """The kernel's steps from S_ij to A_ij = f(S_ij) / Z_i: the model's softmax, or an experiment's kernel."""
    j, kernel = cell.column, cell.kernel
    f_ij = float(cell.row_f[j])
    formula = f"<b>{formula_html(derivation.kernel_formula(kernel))}</b>"
    if not kernel.is_model_softmax:
        formula += " (the experiment's kernel in this layer, not the model's softmax)"
    if kernel.name == "exp":
        tau = kernel.temperature
        tempered = "S<sub>ij</sub>" if tau == 1.0 else "S<sub>ij</sub>/τ"
        step = (("" if tau == 1.0 else f"S<sub>ij</sub>/τ = {cell.score / tau:.6g} (τ = {tau:g}); ")
                + f"row max m = max<sub>j</sub> {tempered} = {cell.row_max:.6g}; "
                f"exp({tempered} − m) = {f_ij:.6g}; Z<sub>i</sub> = Σ<sub>j</sub> exp({tempered} − m) = {cell.z:.6g}")
    elif kernel.name == "relu":
        step = (f"relu(S<sub>ij</sub>) = max(0, {cell.score:.6g}) = {f_ij:.6g}; "
                f"Z<sub>i</sub> = Σ<sub>j</sub> max(0, S<sub>ij</sub>) over the visible keys = {cell.z:.6g}")
    else:
        step = (f"f(S<sub>ij</sub>) = S<sub>ij</sub> = {f_ij:.6g}; "
                f"Z<sub>i</sub> = Σ<sub>j</sub> S<sub>ij</sub> over the visible keys = {cell.z:.6g}")
    lines = [formula, step, f"<b>A<sub>ij</sub> = {f_ij:.6g} / {cell.z:.6g} = {cell.weight:.6g}</b> "
                            f"(recorded {cell.recorded_weight:.6g})"]
    if cell.conditioning > ILL_CONDITIONED:
        lines.append(f"Z<sub>i</sub> is a signed sum that nearly cancels here (Σ<sub>j</sub> |S<sub>ij</sub>| / "
                     f"|Z<sub>i</sub>| = {cell.conditioning:.3g}): the model's float32 rounding reaches A<sub>i</sub> "
                     "that many times larger, and so does its |Δ| below")
    return lines


def replaced_sentence(cell: derivation.CellDerivation) -> str:
    """The plain words for a head an experiment replaced (plain text; the panel shows it in bold)."""
    return (f"This head's output was replaced by the experiment: {cell.replaced_by}. "
            "A·V below is what it would have been; the model went on with the replacement.")


def replaced_html(cell: derivation.CellDerivation) -> str:
    return (f"<b>{html.escape(replaced_sentence(cell))}</b><br>O<sub>h</sub> at row {cell.row}, as the model used it: "
            f"{_vector(cell.used_output)}; it differs from A·V by up to {cell.replaced_gap:.3g}, the experiment's "
            "doing, not a mismatch (not counted in |Δ| below)")


def _written(cell: derivation.CellDerivation) -> str:
    if cell.head_write is None:
        return "y W<sup>O</sup>: reading the head's W<sup>O</sup> from the model…"
    if cell.replaced_by is not None:
        return (f"O<sub>h</sub> W<sup>O</sup><sub>h</sub> (the replacement) = {_vector(cell.head_write)}, "
                f"‖·‖ = {float(np.linalg.norm(cell.head_write)):.4g}: what the head added to the residual stream")
    return (f"y<sub>i</sub> W<sup>O</sup><sub>h</sub> = {_vector(cell.head_write)}, "
            f"‖·‖ = {float(np.linalg.norm(cell.head_write)):.4g}: what the head adds to the residual stream "
            "(its share of the logit is in Why this token)")


def _dims_table(cell: derivation.CellDerivation) -> str:
    shown = min(SHOWN_DIMS, cell.products.size)
    pair_of = {}
    if cell.q_rotation is not None:
        for pair, (a, b) in enumerate(cell.q_rotation.pairs):
            pair_of[int(a)] = pair_of[int(b)] = pair
    rows = "".join(f"<tr><td>{d}</td><td>{pair_of.get(d, '–')}</td><td>{cell.q[d]:+.4f}</td><td>{cell.k[d]:+.4f}</td>"
                   f"<td>{cell.products[d]:+.5f}</td></tr>" for d in range(shown))
    more = f"<br>… {cell.products.size - shown} more dims" if cell.products.size > shown else ""
    return ("per dimension:<table cellspacing=4><tr><th>d</th><th>RoPE pair</th><th>q<sub>id</sub></th>"
            f"<th>k<sub>jd</sub></th><th>q<sub>id</sub> k<sub>jd</sub></th></tr>{rows}</table>{more}")
