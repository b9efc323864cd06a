"""A Run's activations by name: run.residual(l), run.attn_out(l), ... and run.cache under TransformerLens's names.

    cache = run.cache                                    # read-only Mapping, numpy (T, ...) float32
    cache["blocks.3.hook_resid_post"]                    # = run.residual(3)
    run.activations(as_torch=True)["blocks.3.attn.hook_z"]   # torch on request

Nothing is recorded by default (the trace keeps Q, K, V and ||h||, and X below
the long-prompt threshold): a value is computed when first
asked, by one pass through the blocks up to its layer (explorer.core.activations), and kept on the
Run until the run moves on. A first access computes every name of every layer up to the asked one
in that pass when they fit in ALL_AT_ONCE bytes (a short prompt), else the asked value alone.
hook_pattern is the trace's own A (on demand from Q and K), so it costs no pass.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from explorer.core.errors import ExplorerError

ALL_AT_ONCE = 256 << 20        # bytes: below this, the first access computes every name up to its layer

# TransformerLens's hook name (without "blocks.{l}.") -> the name in core.activations
HOOKS = {"hook_resid_pre": "resid_pre", "hook_resid_mid": "resid_mid", "hook_resid_post": "resid_post",
         "hook_attn_out": "attn_out", "hook_mlp_out": "mlp_out", "mlp.hook_post": "mlp_post",
         "ln1.hook_scale": "scale_attn", "ln2.hook_scale": "scale_mlp", "attn.hook_q": "q", "attn.hook_k": "k",
         "attn.hook_v": "v", "attn.hook_rot_q": "rot_q", "attn.hook_rot_k": "rot_k", "attn.hook_z": "z",
         "attn.hook_pattern": "pattern", "ln1.hook_normalized": "attn_in"}
# ln1.hook_normalized is X = Norm(h) with the norm's weight (and bias), the attention's input: what
# TransformerBridge hooks there (its norm's output). HookedTransformer with its default fold_ln gives X / gamma.
NORMS = {"attn": "scale_attn", "mlp": "scale_mlp", "final": "scale_final"}
_NAME = re.compile(r"blocks\.(\d+)\.(.+)")


def parse(name: Any, n_layers: int) -> tuple[int, str]:
    """(layer, core name) of a TransformerLens hook name, or ExplorerError in one sentence."""
    if name == "ln_final.hook_scale":
        return -1, "scale_final"
    match = _NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None or match.group(2) not in HOOKS:
        raise ExplorerError(f"{name!r} is not an activation name: use blocks.<layer>.<hook>, the hooks being "
                            f"{', '.join(HOOKS)}, or ln_final.hook_scale")
    layer = int(match.group(1))
    if layer >= n_layers:
        raise ExplorerError(f"{name!r} names layer {layer}; the model has layers 0 to {n_layers - 1}")
    return layer, HOOKS[match.group(2)]


class Activations:
    """The computed activations of one Run's current trace, {(layer, name): array}, filled on demand."""

    def __init__(self, run):
        self.run = run
        self.trace = run.trace
        self.values: dict[tuple[int, str], np.ndarray] = {}

    def get(self, layer: int, name: str) -> np.ndarray:
        if name == "pattern":
            self.run._needs_layers("attention pattern")
            return self.run.trace.attention(layer).astype(np.float32, copy=False)
        if (layer, name) not in self.values:
            self.fill({layer: {name}} if layer >= 0 else {-1: {name}})
        return self.values[layer, name]

    def fill(self, wanted: dict[int, set[str]]) -> None:
        """Compute the asked names (and, for a short run, every name of the layers up to them) in one pass."""
        from explorer.core import activations  # torch, loaded on first use

        run = self.run
        if not getattr(run.decoder, "can_generate", True) or not hasattr(run.decoder, "kv_cache"):
            raise ExplorerError(f"activations by name are for decoder-only models; {run.model.name} is not one")
        deepest = max(wanted)
        if deepest >= 0 and self._bytes_per_layer() * (deepest + 1) <= ALL_AT_ONCE:
            wanted = {layer: set(activations.RESIDUAL_NAMES) | wanted.get(layer, set())
                      for layer in range(deepest + 1)} | ({-1: wanted[-1]} if -1 in wanted else {})
        wanted = {layer: {n for n in names if (layer, n) not in self.values} for layer, names in wanted.items()}
        run_of = getattr(run.decoder, "_intervened", None)                     # the prefill's means, kept
        self.values.update(activations.compute(run.model.loaded, run.ids, wanted, run_of))

    def _bytes_per_layer(self) -> int:
        info = self.run.model.info
        return 4 * self.run.trace.n_tokens * (5 * info.d_model + 2)


class ActivationCache(Mapping):
    """A read-only Mapping from TransformerLens hook names to a Run's activations (numpy, or torch)."""

    def __init__(self, run, as_torch: bool = False):
        self.run, self.as_torch = run, bool(as_torch)

    def __getitem__(self, name: str):
        layer, core_name = parse(name, self.run.trace.model.n_layers)
        value = self.run._activations().get(layer, core_name)
        if core_name.startswith("scale"):
            value = value[:, None]                                              # (T, 1), as TransformerLens
        if self.as_torch:
            import torch

            return torch.from_numpy(value)
        return value

    def __iter__(self) -> Iterator[str]:
        for layer in range(self.run.trace.model.n_layers):
            for hook in HOOKS:
                yield f"blocks.{layer}.{hook}"
        yield "ln_final.hook_scale"

    def __len__(self) -> int:
        return self.run.trace.model.n_layers * len(HOOKS) + 1

    def __contains__(self, name: object) -> bool:
        try:
            parse(name, self.run.trace.model.n_layers)
        except ExplorerError:
            return False
        return True

    def __repr__(self) -> str:
        return f"<explorer.ActivationCache of {self.run!r}: {len(self)} names, {'torch' if self.as_torch else 'numpy'}>"
