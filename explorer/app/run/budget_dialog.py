"""The question a prompt over the trace memory budget asks: keep its last tokens, or run it whole by recording
in float16 or under a larger budget, or not run it (and say so).

What fills the trace (see trace_budget): a short prompt of n tokens stores its maps, about
per_pair · n(n+1)/2 bytes; a long one keeps Q, K and V alone (per_token · n) and rebuilds its maps
on demand, and each decoding step at length t adds a row of t pairs. Under the default budget (a
quarter of the machine's memory) the question is rare. float16 halves every recorded number; a
larger budget is offered where it stays within MAX_BUDGET_MB.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtWidgets import QMessageBox, QWidget

from explorer.app.run.trace_budget import MAX_BUDGET_MB, TraceCost, human_bytes

KEEP, HALF, RAISE = "keep", "float16", "raise"
ROOM = 1.5                     # a raised budget leaves half as much again for decoding after the prompt


@dataclass(frozen=True)
class Choice:
    key: str                   # KEEP, HALF or RAISE
    label: str                 # the button's text
    budget: int = 0            # RAISE: the new budget in bytes


def choices(cost: TraceCost, n_tokens: int, budget: int, keep: int, record_dtype: str) -> list[Choice]:
    """What can be done with a prompt of n_tokens over `budget`: keep `keep` tokens, or run it whole."""
    offered = [Choice(KEEP, f"Keep the last {keep:,} tokens")]
    half = TraceCost(per_token=cost.per_token / 2, per_pair=cost.per_pair / 2,
                     prefill_pair=None if cost.prefill_pair is None else cost.prefill_pair / 2,
                     rebuilt_from=cost.rebuilt_from)
    if record_dtype == "float32" and half.max_prompt_tokens(budget) >= n_tokens:
        offered.append(Choice(HALF, f"Record in float16 ({human_bytes(half.prefill_bytes(n_tokens))})"))
    needed = math.ceil(ROOM * cost.prefill_bytes(n_tokens) / 1e6) * 10 ** 6
    if needed <= MAX_BUDGET_MB * 10 ** 6:
        offered.append(Choice(RAISE, f"Raise the budget to {human_bytes(needed)}", budget=needed))
    return offered


def choose(parent: QWidget | None, title: str, text: str, offered: list[Choice]) -> Choice | None:
    """Ask with one button per choice and Cancel; the choice made, or None for Cancel."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.Cancel, parent)
    buttons = {box.addButton(choice.label, QMessageBox.ButtonRole.AcceptRole): choice for choice in offered}
    box.setDefaultButton(next(iter(buttons)))
    box.exec()
    return buttons.get(box.clickedButton())
