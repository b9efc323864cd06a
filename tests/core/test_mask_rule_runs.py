"""MaskRule.runs: each row's run of visible keys, by bisection, equals the dense rows the rule defines."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core.attention_maps import MaskRule


@pytest.mark.parametrize("kind, window", [("causal", None), ("sliding", 4), ("full", None)])
def test_runs_are_the_dense_rows(kind, window):
    queries, keys = np.arange(3, 20), np.arange(0, 20)
    rule = MaskRule(kind, queries, keys, window)
    lo, hi = rule.runs(2, 15)
    dense = np.zeros((13, keys.size), dtype=bool)
    for row, (a, b) in enumerate(zip(lo, hi)):
        dense[row, a:b] = True
    expected = np.ones_like(dense) if kind == "full" else keys[None, :] <= queries[2:15, None]
    if kind == "sliding":
        expected &= keys[None, :] > queries[2:15, None] - window
    np.testing.assert_array_equal(dense, expected)
    np.testing.assert_array_equal(dense, rule.rows(2, 15))


def test_keys_out_of_order_have_no_runs():
    assert MaskRule("causal", np.arange(4), np.array([2, 0, 1, 3])).runs() is None
