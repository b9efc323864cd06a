"""Scoped capture of one forward pass: the model hands its intermediates to this object.

No hooks, no global state: the decoder creates one StepCapture per step, passes
it down the forward call, turns what it holds into trace records, and drops it.
"""
from __future__ import annotations


class StepCapture:
    """Per layer, the tensors and values one forward pass produced (names follow AttentionRecord)."""

    def __init__(self, n_layers: int):
        self.layers: list[dict] = [{} for _ in range(n_layers)]

    def record(self, layer: int, **values) -> None:
        self.layers[layer].update(values)
