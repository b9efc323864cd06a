"""Bounded caches the views keep of what they computed from immutable records and traces. Numpy-free.

A view asked again about the same record (a repaint, a decoding step that adds one row) finds its
work here instead of doing it again. Each cache is an object with its bound, named where it is
made; none is reached through a `global` statement. Entries are keyed by the objects' ids, and a
hit is checked by identity (`is`) against the object stored with it, since Python reuses the id
of an object once it is freed.
"""
from __future__ import annotations

from collections import OrderedDict


class LruCache(OrderedDict):
    """At most `size` entries; the one used least recently goes first. A dict otherwise (tests read it as one)."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def recall(self, key):
        """The entry under `key`, now the most recently used; None where there is none."""
        hit = self.get(key)
        if hit is not None:
            self.move_to_end(key)
        return hit

    def remember(self, key, value) -> None:
        """Keep `value` under `key`, dropping the least recently used entry beyond the bound."""
        self[key] = value
        self.move_to_end(key)
        if len(self) > self.size:
            self.popitem(last=False)


class LastOf:
    """What `build(owner)` gave for the last owner asked about: one entry, so it holds one owner at most."""

    def __init__(self, build):
        self.build = build
        self._last: tuple = (None, None)

    def __call__(self, owner):
        last_owner, result = self._last
        if last_owner is owner:
            return result
        result = self.build(owner)
        self._last = (owner, result)
        return result


class PerItem:
    """`build(item)` for each item of a sequence that grows at its end (a trace's steps), each built once:
    a sequence that begins with the same objects (`is`) as the last one asked about reuses their results, so
    a decoding step builds one. Holds the results of the last sequence only."""

    def __init__(self, build):
        self.build = build
        self._items: list = []
        self._results: list = []

    def __call__(self, items) -> list:
        kept = 0
        for old, new in zip(self._items, items):
            if old is not new:
                break
            kept += 1
        self._results = self._results[:kept] + [self.build(item) for item in items[kept:]]
        self._items = list(items)
        return self._results
