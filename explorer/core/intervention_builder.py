"""Intervention().ablate(3, 2).patch_head(5, 1, values): an intervention built by chaining.

Each method returns a new frozen Intervention with one more part (intervention_parts.py); the
value it is called on is unchanged, so one base can be extended in several ways. Arrays are
copied to float32 numpy (torch tensors are accepted and detached).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from explorer.core.errors import ExplorerError
from explorer.core.intervention_parts import (
    HeadAblation,
    HeadPatch,
    HideBand,
    HideEntry,
    HideToken,
    InputPatch,
    Kernel,
    KernelChoice,
    PathPatch,
    PatternPatch,
    ResidualPatch,
    SublayerPatch,
)


def as_values(values, what: str, ndim: int) -> np.ndarray:
    """`values` (numpy, torch or nested lists) as a float32 array of `ndim` dimensions, or ExplorerError."""
    if hasattr(values, "detach"):
        values = values.detach().to("cpu").float().numpy()
    try:
        array = np.array(values, dtype=np.float32)
    except (TypeError, ValueError):
        raise ExplorerError(f"{what} must be an array of numbers, not {type(values).__name__}") from None
    if array.ndim != ndim:
        raise ExplorerError(f"{what} must have {ndim} dimensions, not shape {array.shape}")
    if not np.isfinite(array).all():
        raise ExplorerError(f"{what} must be finite numbers; they hold {array[~np.isfinite(array)][0]}")
    return array


def _index(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ExplorerError(f"{what} must be an integer, not {value!r}")
    return int(value)


def _layers(first, last) -> tuple[int, int | None]:
    """A hiding edit's first and last layer (None: to the last), each 0 or more."""
    first = _position(first, "first_layer")
    return first, None if last is None else _position(last, "last_layer")


def _position(value, what: str) -> int:
    """A whole number 0 or more: a position of a prompt (counted from its first token, as every prompt of a batch
    counts it) or a layer."""
    if _index(value, what) < 0:
        raise ExplorerError(f"{what} must be 0 or more, not {value}")
    return int(value)


class Chaining:
    """The chaining methods of Intervention (a frozen dataclass with the fields they extend)."""

    def ablate(self, layer: int, head: int, mode: str = "zero", positions=None, where: str = "self"):
        """O_h set to 0 ("zero") or to its mean over the prompt's positions ("mean"), at the query
        `positions` given (None: every position)."""
        if positions is not None:
            positions = (positions,) if isinstance(positions, (int, np.integer)) else positions
            try:
                positions = tuple(_position(p, "an ablated position") for p in positions)
            except TypeError:
                raise ExplorerError(f"positions must be a position or a list of them, not {positions!r}") from None
        part = HeadAblation(_index(layer, "layer"), _index(head, "head"), mode, where, positions)
        return replace(self, ablations=self.ablations + (part,))

    def kernel(self, name: str, layers=None, temperature: float = 1.0, where: str = "self"):
        """f_kappa of A = Z^-1 f_kappa(S) in `layers` (None: every layer).

        name: "exp" (at temperature tau), "linear" or "relu"."""
        chosen = None if layers is None else tuple(_index(layer, "a kernel layer") for layer in
                                                   ((layers,) if isinstance(layers, (int, np.integer)) else layers))
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.integer, np.floating)):
            raise ExplorerError(f"kernel temperature must be a number, not {temperature!r}")
        return replace(self, kernels=self.kernels + (KernelChoice(Kernel(name, float(temperature)), chosen, where),))

    def hide(self, key: int, query: int | None = None, first_layer: int = 0, last_layer: int | None = None,
             where: str = "self"):
        """Hide the key at position `key` from the query at `query` (None: from every query), in layers first..last."""
        first_layer, last_layer = _layers(first_layer, last_layer)
        edit = HideToken(_position(key, "key"), first_layer, last_layer, where) if query is None else \
            HideEntry(_position(query, "query"), _position(key, "key"), first_layer, last_layer, where)
        return replace(self, edits=self.edits + (edit,))

    def hide_band(self, low: int, high: int | None = None, first_layer: int = 0, last_layer: int | None = None,
                  where: str = "self"):
        """Hide every entry whose offset i - j (query minus key) lies in low..high."""
        first_layer, last_layer = _layers(first_layer, last_layer)
        high = None if high is None else _index(high, "high")
        return replace(self, edits=self.edits + (HideBand(_index(low, "low"), high, first_layer, last_layer, where),))

    def patch_head(self, layer: int, head: int, values, start: int = 0, where: str = "self"):
        """O_h of one head at positions start.. replaced by `values` (n, d_v)."""
        part = HeadPatch(_index(layer, "layer"), _index(head, "head"), as_values(values, "head values", 2),
                         _position(start, "start"), where)
        return replace(self, head_patches=self.head_patches + (part,))

    def patch_residual(self, layer: int, position: int, value):
        """The residual stream entering block `layer` at `position` replaced by `value` (d_model,)."""
        part = ResidualPatch(_index(layer, "layer"), _position(position, "position"), as_values(value, "residual", 1))
        return replace(self, residual_patches=self.residual_patches + (part,))

    def patch_attn_out(self, layer: int, values, start: int = 0):
        """What the attention sublayer of block `layer` adds to the residual, at start.., replaced by (n, d_model)."""
        return self._sublayer(layer, "attn_out", values, start)

    def patch_mlp_out(self, layer: int, values, start: int = 0):
        """What the FFN (or MoE) sublayer of block `layer` adds to the residual, at start..,
        replaced by (n, d_model)."""
        return self._sublayer(layer, "mlp_out", values, start)

    def _sublayer(self, layer, which: str, values, start):
        part = SublayerPatch(_index(layer, "layer"), which, as_values(values, f"{which} values", 2),
                             _position(start, "start"))
        return replace(self, sublayer_patches=self.sublayer_patches + (part,))

    def patch_q(self, layer: int, head: int, values, start: int = 0):
        """Q_h = X W^Q_h of query head `head` (after any q-norm, before RoPE), at start.., replaced by (n, d_head)."""
        return self._input(layer, head, "q", values, start)

    def patch_k(self, layer: int, head: int, values, start: int = 0):
        """K_g = X W^K_g of key-value head `head` (after any k-norm, before RoPE), at start..,
        replaced by (n, d_head)."""
        return self._input(layer, head, "k", values, start)

    def patch_v(self, layer: int, head: int, values, start: int = 0):
        """V_g = X W^V_g of key-value head `head`, at start.., replaced by (n, d_head)."""
        return self._input(layer, head, "v", values, start)

    def _input(self, layer, head, which: str, values, start):
        part = InputPatch(_index(layer, "layer"), _index(head, "head"), which,
                          as_values(values, f"{which} values", 2), _position(start, "start"))
        return replace(self, input_patches=self.input_patches + (part,))

    def patch_pattern(self, layer: int, head: int, values, start: int = 0, where: str = "self"):
        """A_h's rows of query positions start.. replaced by `values` (n, n_keys), column j the key at position j."""
        part = PatternPatch(_index(layer, "layer"), _index(head, "head"), as_values(values, "pattern values", 2),
                            _position(start, "start"), where)
        return replace(self, pattern_patches=self.pattern_patches + (part,))

    def patch_path(self, sender: tuple[int, int], receiver: tuple[int, int], which: str, values, start: int = 0):
        """Path patching: the sender (layer, head)'s output O_s replaced by `values` (n, d_v) at start.. only
        on its way into the receiver (layer, head)'s `which` input ("q", "k" or "v")."""
        try:
            (sender_layer, sender_head), (receiver_layer, receiver_head) = sender, receiver
        except (TypeError, ValueError):
            raise ExplorerError(f"sender and receiver must be (layer, head) pairs,"
                                f" not {sender!r}, {receiver!r}") from None
        part = PathPatch(_index(sender_layer, "sender layer"), _index(sender_head, "sender head"),
                         _index(receiver_layer, "receiver layer"), _index(receiver_head, "receiver head"), which,
                         as_values(values, "sender values", 2), _position(start, "start"))
        return replace(self, path_patches=self.path_patches + (part,))
