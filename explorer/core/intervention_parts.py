"""The parts an Intervention is made of: each a frozen value naming one term of the algebra.

    S_h = Q_h K_h^T * scale,  A_h = Z^-1 f_kappa(S_h),  O_h = A_h V_h,  y = concat_h O_h W^O
    h = h + y;  h = h + FFN(Norm(h))

Kernels and visibility edits change A_h; ablations and head patches change O_h; input patches
change Q_h, K_g or V_g as projected; pattern patches change A_h after it is normalised;
sublayer patches change what a sublayer adds to the residual; residual patches change h
entering a block. Every patch holds values taken from another run (activation patching) and
applies to the rows whose query position lies in start..start+n (and, in a pass that packs
several sequences, only to its `sequence`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.errors import ExplorerError

KERNELS = ("exp", "linear", "relu")
WHERE = ("self", "cross", "encoder")
ABLATION_MODES = ("zero", "mean")


def check_one_of(what: str, value, allowed: tuple[str, ...]) -> None:
    """Refuse a `value` outside `allowed`, in one sentence that names what it is and lists the choices."""
    if value not in allowed:
        raise ExplorerError(f"{what} {value!r} is not one of {', '.join(allowed)}")


@dataclass(frozen=True)
class Kernel:
    """f_kappa of A = Z^-1 f_kappa(S): "exp" (softmax at temperature tau), "linear" or "relu"."""

    name: str = "exp"
    temperature: float = 1.0          # tau of exp(S / tau); only for "exp"

    def __post_init__(self):
        check_one_of("kernel", self.name, KERNELS)
        if not self.temperature > 0:
            raise ExplorerError(f"kernel temperature {self.temperature} must be above 0")
        if self.name != "exp" and self.temperature != 1.0:
            raise ExplorerError(f"a temperature applies to the exp kernel only, not to {self.name!r}")

    @property
    def is_model_softmax(self) -> bool:
        return self.name == "exp" and self.temperature == 1.0

    def formula(self) -> str:
        """The kernel as the attention formula writes it."""
        if self.name == "linear":
            return "A = Z⁻¹ S"
        if self.name == "relu":
            return "A = Z⁻¹ max(0, S)"
        if self.temperature != 1.0:
            return f"A = softmax(S / {self.temperature:g})"
        return "A = softmax(S)"


SOFTMAX = Kernel()


def _layer_range(first: int, last: int | None, layer: int) -> bool:
    return first <= layer and (last is None or layer <= last)


@dataclass(frozen=True)
class KernelChoice:
    """Use `kernel` in the listed layers (None: every layer) of sublayer `where`."""

    kernel: Kernel
    layers: tuple[int, ...] | None = None
    where: str = "self"

    def applies(self, layer: int, where: str) -> bool:
        return where == self.where and (self.layers is None or layer in self.layers)


@dataclass(frozen=True)
class HeadAblation:
    """O_h of head `head` in `layer` replaced by 0 ("zero") or by its mean over the prompt ("mean"),
    at the query `positions` listed (None: at every position)."""

    layer: int
    head: int
    mode: str = "zero"
    where: str = "self"
    positions: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.positions is not None:            # a session file gives a list: kept as a hashable tuple
            object.__setattr__(self, "positions", tuple(int(p) for p in self.positions))


@dataclass(frozen=True)
class KeepOnly:
    """Every head of sublayer `where` not in `heads` ((layer, head) pairs) is ablated with `mode`."""

    heads: tuple[tuple[int, int], ...]
    mode: str = "zero"
    where: str = "self"


@dataclass(frozen=True)
class HideEntry:
    """Hide the key at position `key` from the query at position `query` (layers first..last)."""

    query: int
    key: int
    first_layer: int = 0
    last_layer: int | None = None
    where: str = "self"

    def hides(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return (queries[:, None] == self.query) & (keys[None, :] == self.key)


@dataclass(frozen=True)
class HideToken:
    """Hide the token at position `key` from every query of layers first..last."""

    key: int
    first_layer: int = 0
    last_layer: int | None = None
    where: str = "self"

    def hides(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return np.broadcast_to(keys[None, :] == self.key, (len(queries), len(keys)))


@dataclass(frozen=True)
class HideBand:
    """Hide every entry whose offset i - j (query minus key position) lies in low..high."""

    low: int
    high: int | None = None           # None: no upper end (hide everything at least `low` back)
    first_layer: int = 0
    last_layer: int | None = None
    where: str = "self"

    def hides(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
        offset = queries[:, None] - keys[None, :]
        return (offset >= self.low) & (offset <= (np.inf if self.high is None else self.high))


@dataclass(frozen=True, eq=False)
class HeadPatch:
    """O_h of head `head` in `layer` at positions start.. replaced by `values` (n, d_v).

    `sequence`: in a pass that packs several sequences (patching.py), only that one's rows."""

    layer: int
    head: int
    values: np.ndarray
    start: int = 0
    where: str = "self"
    sequence: int | None = None


@dataclass(frozen=True, eq=False)
class ResidualPatch:
    """The residual stream entering block `layer` at `position` replaced by `value` (d_model,)."""

    layer: int
    position: int
    value: np.ndarray
    sequence: int | None = None


EDIT_TYPES = {"entry": HideEntry, "token": HideToken, "band": HideBand}


SUBLAYERS = ("attn_out", "mlp_out")
HEAD_INPUTS = ("q", "k", "v")


@dataclass(frozen=True, eq=False)
class SublayerPatch:
    """What sublayer `which` ("attn_out" or "mlp_out") of block `layer` adds to the residual, at
    positions start.., replaced by `values` (n, d_model) (Gemma: after its post-norm)."""

    layer: int
    which: str
    values: np.ndarray
    start: int = 0
    sequence: int | None = None

    def __post_init__(self):
        check_one_of("sublayer output", self.which, SUBLAYERS)


@dataclass(frozen=True, eq=False)
class InputPatch:
    """Q_h (`which` "q", query head `head`) or K_g / V_g ("k" / "v", key-value head `head`) of `layer`
    as projected, X W^Q_h (after any q/k norm, before RoPE), at positions start.. replaced by `values` (n, d_head)."""

    layer: int
    head: int
    which: str
    values: np.ndarray
    start: int = 0
    sequence: int | None = None

    def __post_init__(self):
        check_one_of("head input", self.which, HEAD_INPUTS)


@dataclass(frozen=True, eq=False)
class PatternPatch:
    """A_h of head `head` in `layer`, the rows of query positions start.., replaced by `values`
    (n, n_keys): column j is the weight of the key at position j; O_h = A_h V_h then reads it."""

    layer: int
    head: int
    values: np.ndarray
    start: int = 0
    where: str = "self"
    sequence: int | None = None


@dataclass(frozen=True, eq=False)
class PathPatch:
    """Path patching: the sender head's output O_s (`sender_layer`, `sender_head`) taken from another run,
    `values` (T, d_v) at positions start.., reaching only the receiver head's `which` input ("q", "k" or
    "v", the key-value head for k and v) in `receiver_layer`. That head reads Norm(h + (values - O_s) W^O_s)
    where every other head, and every other layer, reads Norm(h) of the run itself."""

    sender_layer: int
    sender_head: int
    receiver_layer: int
    receiver_head: int
    which: str
    values: np.ndarray
    start: int = 0
    sequence: int | None = None

    def __post_init__(self):
        check_one_of("a path's receiver input", self.which, HEAD_INPUTS)
        if not self.sender_layer < self.receiver_layer:
            raise ExplorerError(f"a path runs from an earlier layer to a later one: sender layer {self.sender_layer} "
                                f"is not before receiver layer {self.receiver_layer}")


def rows_of(queries: np.ndarray, sequences: np.ndarray | None, patch) -> np.ndarray:
    """The rows of a pass (query positions `queries`, packed `sequences`) that `patch` writes."""
    inside = (queries >= patch.start) & (queries < patch.start + len(patch.values))
    if sequences is not None and patch.sequence is not None:
        inside &= sequences == patch.sequence
    return np.flatnonzero(inside)


def pattern_rows(patch: PatternPatch, queries: np.ndarray, keys: np.ndarray, sequences: np.ndarray | None,
                 rows: np.ndarray, key_counts: np.ndarray | None = None) -> np.ndarray:
    """The rows `rows` of a pass (query positions queries[rows]) that pattern `patch` writes, over the pass's
    keys (n, n_kv) float32: column j the patch's weight of the key at position keys[j] where the row's own
    prompt has that key, 0 elsewhere. A row's own keys: every key of the pass; in a packed pass its
    sequence's; in a padded batch (`key_counts`: each prompt's number of keys, right-padded) those of the
    longest prompt that has the row (for cross-attention, every prompt). A patch with fewer columns than a
    row's own keys is refused in one sentence, alone or in a batch alike."""
    mine = queries[rows]
    own = np.ones((len(rows), len(keys)), dtype=bool) if sequences is None else \
        sequences[rows][:, None] == sequences[None, :]
    if key_counts is not None:
        counts = np.asarray(key_counts)
        longest = np.full(len(rows), counts.max()) if patch.where == "cross" else \
            np.array([counts[counts > q].max(initial=0) for q in mine])
        own &= keys[None, :] < longest[:, None]
    row, key = np.nonzero(own)
    width = patch.values.shape[1]
    beyond = np.flatnonzero(keys[key] >= width)
    if beyond.size:
        short = row[beyond[0]]
        raise ExplorerError(f"the pattern patch of layer {patch.layer}, head {patch.head} has {width} columns, "
                            f"but its row for position {int(mine[short])} is over {int(own[short].sum())} keys "
                            f"and needs a weight for each")
    values = np.zeros(own.shape, dtype=np.float32)
    values[row, key] = patch.values[mine[row] - patch.start, keys[key]]
    return values
