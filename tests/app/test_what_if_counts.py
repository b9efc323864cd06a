"""The KV lab what-if words agree in number with their counts: a one-step session read "The rows follow this
session's tokens for its 1 steps" (drive on bare X). Checked by English grammar: a count of 1 is followed by
the singular noun, any other count by the plural."""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from explorer.app.widgets.what_if_view import WhatIfView, followed_words, result_summary


def _counted_nouns(text: str) -> list[tuple[int, str]]:
    return [(int(n.replace(",", "")), noun) for n, noun in re.findall(r"\b(\d[\d,]*) (steps?|tokens?)\b", text)]


def _agrees(n: int, noun: str) -> bool:
    return noun.endswith("s") != (n == 1)


def _result(followed: int, steps: int, last_position: int = 0):
    row = SimpleNamespace(step=1, position=last_position, token_id=5, kl=0.0, top1_agrees=True,
                          original_bytes=100, converted_bytes=50, bytes_saved=50)
    return SimpleNamespace(followed=followed, comparisons=[row] * steps, variant="mqa", relative_error=[0.1])


@pytest.mark.parametrize("followed,steps", [(1, 3), (2, 3), (1, 1), (3, 3)])
def test_the_followed_steps_agree_in_number(followed, steps):
    counted = _counted_nouns(followed_words(_result(followed, steps)))
    assert counted and counted[0][0] == followed
    assert all(_agrees(n, noun) for n, noun in counted), counted


@pytest.mark.parametrize("last_position", [0, 1, 1023])
def test_the_summary_counts_agree_in_number(last_position):
    counted = _counted_nouns(result_summary(_result(1, 2, last_position)))
    assert (last_position + 1, "token" if last_position == 0 else "tokens") in counted, counted
    assert all(_agrees(n, noun) for n, noun in counted), counted


@pytest.mark.parametrize("steps", [1, 4])
def test_the_working_line_agrees_in_number(qtbot, steps):
    view = WhatIfView()
    qtbot.addWidget(view)
    view.show_working("mqa", steps)
    counted = _counted_nouns(view.run_summary.text())
    assert counted == [(steps, "step" if steps == 1 else "steps")], counted
