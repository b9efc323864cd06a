"""The block walk (explorer.core.block_walk) as rich text: h -> Norm -> attention -> add -> Norm -> FFN -> add."""
from __future__ import annotations

import html

import numpy as np

from explorer.app.widgets.text_helpers import readable


def _vector(values: np.ndarray, n: int = 6) -> str:
    values = np.asarray(values)
    shown = ", ".join(f"{v:+.3f}" for v in values[:n])
    return f"[{shown}{', …' if values.size > n else ''}] ‖·‖ = {float(np.linalg.norm(values)):.4g}"


def _norm(name: str, step) -> str:
    if step.mean is not None:
        stats = (f"μ = {step.mean:.5g}, σ² = {step.variance:.5g}, σ = √(σ² + ε) = {step.scale:.5g} "
                 f"(ε = {step.eps:g})")
        formula = "w (h − μ) / σ + b"
    else:
        stats = f"rms = √(mean(h²) + ε) = {step.scale:.5g} (ε = {step.eps:g})"
        formula = "(1 + w) h / rms" if step.kind == "OffsetRMSNorm" else "w h / rms"
    return f"{name} = {step.kind}: {formula}; {stats}<br>→ {_vector(step.output)}"


def block_html(walk, token_text) -> str:
    """Each step of one position's way through one block, with the recomputation's max |Δ|."""
    token = html.escape(readable(token_text[walk.position])) if walk.position < len(token_text) else ""
    lines = [f"<b>Block {walk.layer}</b> at position {walk.position} '{token}'",
             f"h = {_vector(walk.h_in)}",
             _norm("X", walk.attn_norm),
             f"a = Attention(X) = {_vector(walk.attn_out)}",
             f"h′ = h + a = {_vector(walk.h_mid)}",
             _norm("x", walk.ffn_norm)]
    if walk.experts:
        chosen = ", ".join(f"expert {e}: g = {g:.4f}" for e, g in walk.experts)
        lines.append(f"MoE: f = Σ<sub>e</sub> g<sub>e</sub> FFN<sub>e</sub>(x) + shared; chosen {chosen}")
    elif walk.neurons:
        gated = walk.neurons[0].gate is not None
        head = "<th>n</th>" + ("<th>x W<sub>gate</sub></th>" if gated else "") + \
            "<th>x W<sub>up</sub></th><th>hidden</th><th>|hidden| ‖W<sub>down</sub>[:, n]‖</th>"
        rows = "".join(f"<tr><td>{n.index}</td>" + (f"<td>{n.gate:+.4f}</td>" if gated else "")
                       + f"<td>{n.up:+.4f}</td><td>{n.hidden:+.4f}</td><td>{n.write:.4f}</td></tr>"
                       for n in walk.neurons)
        formula = "W<sub>down</sub> (act(x W<sub>gate</sub>) ⊙ x W<sub>up</sub>)" if gated else \
            "W<sub>out</sub> act(x W<sub>in</sub> + b)"
        lines.append(f"FFN(x) = {formula}; the neurons writing most:<table cellspacing=4><tr>{head}</tr>{rows}</table>")
    lines.append(f"f = {_vector(walk.ffn_out)}")
    lines.append(f"h″ = h′ + f = {_vector(walk.h_out)}")
    deltas = "".join(f"<tr><td>{html.escape(name)}</td><td>{value:.2e}</td></tr>"
                     for name, value in walk.deltas.items())
    lines.append(f"recomputed against the model's own tensors, max |Δ|:<table cellspacing=4>{deltas}</table>")
    return "<br><br>".join(lines)
