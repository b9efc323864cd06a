"""The per-layer logit lens of the Next token panel: softmax(norm(h_l) W_U) after each layer l at the selected
position, asked of the model thread and shown in place of the candidates (NextTokenPanel takes it from here).

An answer is shown only for the step record it was asked of: a later step keeps it, a new prompt or model does not.
"""
from __future__ import annotations

import numpy as np

from explorer.app.panels.base import visible_text
from explorer.app.widgets.candidate_tables import chosen_colour, fill_lens, rows_height

LENS_BUTTON = "Logit lens for this position"
LENS_WORDS = ("logit lens at position", "computing the logit lens")     # the readout's words about the lens
ROWS_SEEN = 3       # the lens's layers kept in sight, whatever the dock's share of the column, and the candidates'
                    # where the column has room: fewer, and a table read as a strip (2 whole rows in 64 px, in the
                    # Next token dock at 1366x768 after the translator, or beside Tokens' warning of the left out)


class LogitLens:
    """The logit lens, for NextTokenPanel (a mixin: it reads the panel's trace, position, session, readout, position
    label, captions and its two tables)."""

    def _on_lens_button(self) -> None:
        if self.lens_table.isVisibleTo(self):
            self._show_lens(False)
        else:
            self._request_lens()

    def _show_lens(self, shown: bool) -> None:
        encoder = self.trace is not None and self.trace.model.is_encoder_only
        # The one going hidden first: both shown for a moment, their minimums summed grew the dock, and Qt took
        # the growth from the Tokens table above and kept it there.
        for widget, visible in sorted([(self.lens_table, shown), (self.table, not shown and not encoder),
                                       (self.tables_box, not shown and not encoder)], key=lambda pair: pair[1]):
            widget.setVisible(visible)
        self.lens_button.setText("Back to the candidates" if shown else LENS_BUTTON)
        self.position_label.set_plain(self._captions[shown])
        if not shown and self.readout.text().startswith(LENS_WORDS):
            self.readout.setText(" ")       # the lens's caption went on naming a table no longer shown
        self._show_before()

    def _set_caption(self, lens: bool, text: str) -> None:
        """The position label's text with the candidates (`lens` False) or with the logit lens, shown while its
        table is: the lens's caption wraps there whole, where the one-line readout cut it (393 px in 333)."""
        self._captions[lens] = text
        if lens == self.lens_table.isVisibleTo(self):
            self.position_label.set_plain(text)

    def _fit_lens_height(self) -> None:
        """The lens keeps ROWS_SEEN layers (or all, if fewer) in sight under its header and sideways scroll bar."""
        table = self.lens_table
        table.setMinimumHeight(rows_height(table, min(ROWS_SEEN, table.rowCount()),
                                           table.horizontalScrollBar().sizeHint().height()))

    @staticmethod
    def _lens_of(trace, position: int | None):
        """What a lens at `position` is of: the step record that fed it (a later step keeps it; a new prompt
        does not), so that an answer for another trace is never shown."""
        if trace is None or position is None or not 0 <= position < trace.n_tokens:
            return None
        return trace.steps[trace.step_of_position(position)]

    def _request_lens(self) -> None:
        if self.position is not None:
            self._lens_asked = self._lens_of(self.trace, self.position)
            self.readout.setText(f"{LENS_WORDS[1]} at position {self.position}…")
            self.session.requests.logit_lens_requested.emit(int(self.position))

    def show_logit_lens(self, lens) -> None:
        """The logit-lens hook: `{"position": int, "ids": (L, k), "probs": (L, k)}`, or the
        `(ids, probs)` pair that the engine's `Decoder.logit_lens(position, k)` returns, handed
        to `session.requests.logit_lens_ready` by whoever answers `logit_lens_requested`. One row per
        layer: the top tokens of softmax(norm(h_l) W_U)."""
        if not isinstance(lens, dict):
            lens = {"ids": lens[0], "probs": lens[1]}
        ids, probs = np.asarray(lens["ids"]), np.asarray(lens["probs"])
        if lens.get("position") is not None and lens["position"] != self.position:
            return
        if self._lens_asked is not None and self._lens_asked is not self._lens_of(self.trace, self.position):
            return                                          # asked of a trace that is no longer shown
        self._lens_shown = self._lens_of(self.trace, self.position)
        k = fill_lens(self.lens_table, ids, probs, lambda token_id: visible_text(self.session.display_token(token_id)),
                      chosen_colour(self.palette()))
        self._fit_lens_height()
        known = self.trace is not None and self.position is not None and self.position < self.trace.n_tokens
        token = visible_text(self.trace.token_text[self.position]) if known else ""
        self._set_caption(True, f"{LENS_WORDS[0]} {self.position} ‘{token}’: the top {k} of softmax(norm(h_l) W_U) "
                                "after each layer l, the likelier the darker")
        self._show_lens(True)
        self.readout.setText(f"{LENS_WORDS[0]} {self.position}")    # short: whole in the one-line readout

