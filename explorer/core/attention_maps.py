"""Attention maps rebuilt from the recorded Q and K, by the operations the model used. Numpy only.

    S_h = Q_h K_g^T * scale,   S <- c tanh(S / c)        (soft-capping by c, where the model has it)
    A_h = Z^-1 f_kappa(S_h) over the visible keys        (exp: softmax(S / tau); linear: S; relu: max(0, S))

The trace keeps what the model keeps, Q and the cache's K (after RoPE) and V, O(L T d),
and computes one head's A, or one row of it, when a view asks, by the kernel the engine
forms A with (kernel.py, written once for torch and numpy). The mask is kept as the rule
that made it (`MaskRule`: causal, a sliding window of W, or full) instead of a T x T array.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from explorer.core import kernel as kernels
from explorer.core.intervention import Kernel

# Query x key entries from which a prefill's A is rebuilt on demand instead of stored (T >= 1,024):
# below that a stored map costs little and the all-heads grid reduces it directly. The engine
# records by it and the app's memory budget projects by it.
ON_DEMAND_FROM = 1 << 20
ROW_BLOCK = 1024        # query rows per block: a block's scores are ROW_BLOCK x n_kv float32, not T x T


def scores(q: np.ndarray, k: np.ndarray, scale: float, softcap: float | None) -> np.ndarray:
    """S = Q K^T * scale, soft-capped to c tanh(S / c) where c is given.  q: (n, d), k: (n_kv, d) -> (n, n_kv)"""
    s = (q.astype(np.float32, copy=False) @ k.astype(np.float32, copy=False).T) * np.float32(scale)
    return kernels.softcapped(s, softcap)


def normalised(s: np.ndarray, visible: np.ndarray, kernel: Kernel | None = None) -> np.ndarray:
    """A = Z^-1 f_kappa(S) over the `visible` entries (n, n_kv) (kernel.weights; `s` already soft-capped);
    masked entries are exactly 0 and a row that sees nothing is all 0. Overwrites `s`. `kernel` None:
    the model's own softmax."""
    return kernels.weights(s, ~np.asarray(visible, dtype=bool), kernel)


def weights(q: np.ndarray, k: np.ndarray, visible, scale: float, softcap: float | None = None,
            kernel=None, rows: slice | None = None) -> np.ndarray:
    """One head's A (n, n_kv) float32 from its Q (n, d) and its K/V head's K (n_kv, d), or the `rows` of it.

    `visible` is the (n, n_kv) mask or a MaskRule. Computed ROW_BLOCK rows at a time, so a long
    prompt never holds more than one block of scores beside the result.
    """
    rows = rows or slice(0, q.shape[0])
    start, stop, _ = rows.indices(q.shape[0])
    out = np.empty((max(0, stop - start), k.shape[0]), dtype=np.float32)
    for first in range(start, stop, ROW_BLOCK):
        last = min(first + ROW_BLOCK, stop)
        block = scores(q[first:last], k, scale, kernels.kernel_softcap(softcap, kernel))
        out[first - start: last - start] = normalised(block, mask_rows(visible, first, last), kernel)
    return out


def mask_rows(visible, first: int, last: int) -> np.ndarray:
    """Rows first..last of a dense mask or a MaskRule, as a bool array."""
    if isinstance(visible, MaskRule):
        return visible.rows(first, last)
    return np.asarray(visible)[first:last]


@dataclass(frozen=True, eq=False)
class MaskRule:
    """Which keys each query sees, as the rule that made the mask instead of the T x T array:

        full:    every key;   causal: key position j <= query position i;
        sliding: i - W < j <= i (a window of W keys, the query's own included).

    Behaves as the dense (n_new, n_kv) bool array where code asks for one: np.asarray(rule),
    .shape, .size, .all(), .sum(), rule[rows].
    """

    kind: str                     # "full" | "causal" | "sliding"
    queries: np.ndarray           # (n_new,) int  absolute positions of the queries
    keys: np.ndarray              # (n_kv,) int   absolute positions of the keys
    window: int | None = None     # W of "sliding"

    @staticmethod
    def of(queries: np.ndarray, keys: np.ndarray, window: int | None = None, causal: bool = True) -> "MaskRule":
        """The rule a pass makes its mask by: every key where it is not causal (an encoder, cross-attention);
        else causal, within a sliding window of W keys where one is given and it hides a key (i - j >= W
        for some query i and key j), else plain causal, the same mask."""
        if not causal:
            return MaskRule("full", queries, keys)
        cuts = bool(window) and queries.size > 0 and keys.size > 0 and int(queries.max()) - int(keys.min()) >= window
        return MaskRule("sliding", queries, keys, int(window)) if cuts else MaskRule("causal", queries, keys)

    def rows(self, first: int, last: int) -> np.ndarray:
        """The dense rows first..last: (last - first, n_kv) bool."""
        query = self.queries[first:last, None]                            # (r, 1)
        if self.kind == "full":
            return np.ones((query.shape[0], self.keys.shape[0]), dtype=bool)
        visible = self.keys[None, :] <= query                             # (r, n_kv)
        if self.kind == "sliding":
            visible &= self.keys[None, :] > query - self.window
        return visible

    def runs(self, first: int = 0, last: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """Each of rows first..last sees the keys lo <= index < hi: (lo, hi), (r,) int each (hi <= lo: none),
        found by bisection where the keys are in increasing order; None where they are not (a ring cache)."""
        keys, queries = self.keys, self.queries[first:last]
        if self.kind not in ("full", "causal", "sliding") or np.any(np.diff(keys) <= 0):
            return None
        n = queries.shape[0]
        if self.kind == "full":
            return np.zeros(n, dtype=np.int64), np.full(n, keys.shape[0], dtype=np.int64)
        hi = np.searchsorted(keys, queries, side="right")                      # keys j <= i
        lo = (np.searchsorted(keys, queries - self.window, side="right") if self.kind == "sliding"
              else np.zeros(n, dtype=np.int64))                                 # and j > i - W
        return lo, hi

    def __array__(self, dtype=None, copy=None):
        dense = self.rows(0, self.queries.shape[0])
        return dense if dtype is None else dense.astype(dtype)

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            return self.rows(int(index), int(index) + 1)[0]
        if isinstance(index, slice) and index.step in (None, 1):
            start, stop, _ = index.indices(self.queries.shape[0])
            return self.rows(start, stop)
        return np.asarray(self)[index]

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.queries.shape[0]), int(self.keys.shape[0])

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def nbytes(self) -> int:
        return int(self.queries.nbytes + self.keys.nbytes)

    @property
    def dtype(self):
        return np.dtype(bool)

    def all(self) -> bool:
        return self.kind == "full" or int(self.sum()) == self.size

    def sum(self) -> int:
        """How many entries are visible, counted row by row from the positions (no dense array)."""
        if self.kind == "full":
            return self.size
        keys = np.sort(self.keys)
        upto = np.searchsorted(keys, self.queries, side="right")          # keys j <= i
        if self.kind == "sliding":
            upto -= np.searchsorted(keys, self.queries - self.window, side="right")   # minus j <= i - W
        return int(upto.sum())


class KeptMaps:
    """Maps computed on demand, kept across every record up to `limit` bytes in all; the one asked
    for least recently goes first. Keyed by the owning record (held weakly, only to tell records apart)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._entries: OrderedDict = OrderedDict()      # (id(owner), key) -> (weakref to owner, array)
        self._bytes = 0
        self._lock = threading.Lock()                    # views may ask from the GUI and a background thread

    def get(self, owner, key) -> np.ndarray | None:
        with self._lock:
            entry = self._entries.get((id(owner), key))
            if entry is None or entry[0]() is not owner:
                return None
            self._entries.move_to_end((id(owner), key))
            return entry[1]

    def put(self, owner, key, value: np.ndarray) -> np.ndarray:
        with self._lock:
            self._drop((id(owner), key))
            self._entries[(id(owner), key)] = (weakref.ref(owner), value)
            self._bytes += value.nbytes
            while self._bytes > self.limit and len(self._entries) > 1:
                self._drop(next(iter(self._entries)))
        return value

    def _drop(self, entry_key) -> None:
        entry = self._entries.pop(entry_key, None)
        if entry is not None:
            self._bytes -= entry[1].nbytes
