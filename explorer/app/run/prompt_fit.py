"""The questions asked before the model runs: a prompt past the context or the trace memory budget is cut
to its last tokens (or recorded in float16, or under a larger budget) only when the person agrees, and a
step past either offers to go on from a shorter context. DecodingController takes these from here.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QMessageBox

from explorer.app.run import budget_dialog
from explorer.app.run.trace_budget import TraceCost, human_bytes
from explorer.app.run.trace_room import BUDGET_MENU
from explorer.views.words import plural


class PromptFit:
    """The questions of DecodingController (a mixin: it reads the controller's session, worker, room, summary,
    trace budget and dialog parent)."""

    def _checked_prompt_ids(self) -> np.ndarray | None:
        """The prompt's ids, or its last ones if it outgrows the context or the budget and the person agrees."""
        ids = self.prompt_ids()
        if ids is None or len(ids) == 0:
            self.session.report_error(getattr(self, "_tokenize_error", None) or
                                      "The prompt is empty; type some text to run.")
            return None
        info, n = self.summary.info, len(ids)
        cost = self.room.cost(self.session.trace, info)
        by_budget = cost.max_prompt_tokens(self.trace_budget)
        # a decoder keeps a position for the next token, a translator's encoder one for its task token (added when
        # the source has none, encdec_decode.source_ids); an encoder predicts none and reads all of them (drive29)
        room = info.max_positions - (0 if info.is_encoder_only else 1)
        if n <= min(room, by_budget):
            return ids
        # Cut for the budget to half of it, so that there is room to decode after the prompt.
        keep = min(room, cost.max_prompt_tokens(self.trace_budget / 2) if n > by_budget else n)
        if keep < 1:
            self.session.report_error(f"The trace memory budget of {human_bytes(self.trace_budget)} is too small "
                                      f"for even one token of {self.summary.name}; raise it in {BUDGET_MENU}.")
            return None
        reasons = []
        if n > room:
            reasons.append(f"The prompt has {n:,} tokens but {self.summary.name} holds {info.max_positions:,} "
                           f"positions{_kept_position(info)}")
        if n > by_budget:
            reasons.append(f"Recording {n:,} prompt tokens would take about {human_bytes(cost.prefill_bytes(n))}, "
                           f"more than the trace memory budget of {human_bytes(self.trace_budget)} ({BUDGET_MENU}).")
        question = " ".join(reasons) + f" Keep only the last {keep:,} tokens?"
        if n <= room:                               # over the budget only: float16 or a larger one run it whole
            return self._over_budget(ids, cost, keep, question)
        if not self._agreed("Prompt longer than the context", question):
            self._not_run(f"The prompt ({plural(n, 'token')}) is longer than {self.summary.name}'s context of "
                          f"{plural(info.max_positions, 'token')}; it was not run. Shorten it, or press Run "
                          f"(Ctrl+Enter) and keep its last {keep:,}.")
            return None
        return ids[-keep:]

    def _not_run(self, reason: str) -> None:
        """The prompt was not run: every panel with nothing to show says why (the session's not_run, which the
        next edit or run clears), and so does the status bar. Without it, a declined question left every panel
        saying "type a prompt and press Run" under the prompt the person had typed."""
        self.session.set_not_run(reason)
        self.notice.emit(reason)

    def _over_budget(self, ids: np.ndarray, cost: TraceCost, keep: int, question: str) -> np.ndarray | None:
        offered = budget_dialog.choices(cost, len(ids), self.trace_budget, keep, self.record_dtype)
        whole = " Or run it whole, recorded in float16 or under a larger budget."
        text = question + (whole if len(offered) > 1 else "")
        choice = budget_dialog.choose(self._dialog_parent, "Prompt over the memory budget", text, offered)
        if choice is None:
            self._not_run(f"The prompt was not run: its {plural(len(ids), 'token')} would pass the trace memory "
                          f"budget of {human_bytes(self.trace_budget)} ({BUDGET_MENU}).")
            return None
        if choice.key == budget_dialog.KEEP:
            return ids[-keep:]
        if choice.key == budget_dialog.HALF:
            self.set_record_dtype("float16")
        else:
            self.set_trace_budget(choice.budget)
        return ids

    # ----- room for one more step: the context and the trace memory budget ------------------------
    def _room_for_step(self) -> bool:
        """True when one more step fits. If not, say so; when idle, offer to go on from a shorter context."""
        trace = self.session.trace
        problem = self.room.step_problem(trace, *self.room.projected(trace, self.worker.plan()))
        if problem is None:
            return True
        if trace.model.is_encoder_decoder:
            # Cutting would feed target tokens to the encoder as a source: stop instead.
            self.set_playing(False)
            self.notice.emit(f"{problem} The translation stops here; shorten the source to go further.")
            return False
        if self.playing or self.worker.busy:
            self.set_playing(False)
            self.notice.emit(f"{problem} Paused; press Step to continue from a shorter context.")
            return False
        sequence = np.append(trace.token_ids, trace.steps[-1].chosen_id)
        cost = self.room.measure(trace)
        keep = max(1, min(trace.model.max_positions // 2, cost.max_prompt_tokens(self.trace_budget / 2),
                          len(sequence) - 1))
        if self._agreed("No room for another token",
                        f"{problem} Continue from the last {keep:,} tokens? The {len(sequence) - keep:,} before "
                        "them leave the trace and the cache."):
            self.worker.prefill(sequence[-keep:])
        return False

    def _agreed(self, title: str, question: str) -> bool:
        answer = QMessageBox.question(self._dialog_parent, title, question)
        return answer == QMessageBox.StandardButton.Yes


def _kept_position(info) -> str:
    """The end of the sentence that says how many positions a model holds: what the one kept back is for."""
    if info.is_encoder_only:
        return "."
    return ", one of them for the task token its encoder reads first." if info.is_encoder_decoder else \
        ", one of them for the next token."
