"""Next token: the top-k candidates p = softmax(h_T W_U) after each step, where the chosen
token ranked, and a per-layer logit lens for the selected position.

Clicking a candidate at the last position asks the session to force it
(`force_requested`), which branches the decoding from there. While experiments are on, the
last position also shows the top-k without them beside the trace's (under them), with
KL(before || after) = sum_v p_v log(p_v / q_v) and the chosen token's change of logit: the
Experiments dock's comparison (`session.comparison`), not computed again here.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QTableWidget, QTableWidgetItem, QWidget

from explorer.app.panels.base import LineLabel, Panel, WrappedText, visible_text
from explorer.app.panels.next_token_lens import LENS_BUTTON, ROWS_SEEN, LogitLens
from explorer.app.state.session import Selection
from explorer.app.thread.requests import CompareNextTokenJob
from explorer.app.widgets.bars import SHARE_ROLE, ShareBarDelegate
from explorer.app.widgets.candidate_tables import chosen_colour, read_only_table, rows_height
from explorer.app.widgets.token_table import fit_row_height
from explorer.core.intervention import active, describe

BAR_PX = 32   # the least width of the probability bars' column (drawn to scale in any width); the rest is theirs


class WholeText(WrappedText):
    """The caption (what came after the position, and how to branch) wrapped whole at any width: a few short lines.
    WrappedText keeps a column squeezed under SQUEEZED_PX to the text's height at that width, which cut the hint's
    last word ("… branch on" at 300 px)."""

    SQUEEZED_PX = 0


class NextTokenPanel(LogitLens, Panel):
    title = "Next token"
    object_name = "next_token"

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.position_label = WholeText()
        self.body.addWidget(self.position_label)
        self._captions = {False: "", True: ""}    # the position label's text, with the candidates and with the lens
        self.table = read_only_table(["#", "token", "id", "p", ""])        # "#": "rank" took 20 px of a narrow dock
        self.table.setItemDelegateForColumn(4, ShareBarDelegate(self.table))     # p / p_max, as long as it has room
        # A click branches; the chosen row is marked by its own colour, so Qt's selection would leave the
        # clicked row lit beside the token chosen after it.
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.cellClicked.connect(self._clicked)
        self.table.viewport().installEventFilter(self)     # the bars' column shown only where it fits (_fit_bars)
        # The un-intervened top-k, beside, only as wide as its columns (_show_before): split 2 : 3, the
        # candidates scrolled sideways with their p and bars out of sight (1366x768, and 1920x1080 with Gemma)
        self.before_table = read_only_table(["before", "p"])
        self.before_table.horizontalHeader().setStretchLastSection(False)
        self.before_table.setVisible(False)
        self.compare_label = WrappedText()
        self.compare_label.setVisible(False)
        self.body.addWidget(self.compare_label)
        # What the candidates are while no before → after of their run is known: one line, whole in its tooltip.
        # Wrapped as the comparison's caption is, it took two or three lines of the candidates' rows in a narrow
        # dock (2 rows left at 1366x768 beside Learn, issue 22), for the whole wait.
        self.waiting_line = LineLabel()
        self.waiting_line.setVisible(False)
        self.body.addWidget(self.waiting_line)
        # In a widget of their own, hidden with them while the logit lens is shown: a layout with its
        # widgets hidden kept its share of the height, a blank band above the lens.
        self.tables_box = QWidget()
        tables = QHBoxLayout(self.tables_box)
        tables.setContentsMargins(0, 0, 0, 0)
        tables.addWidget(self.before_table, 0)
        tables.addWidget(self.table, 1)
        self.body.addWidget(self.tables_box, 2)
        self.lens_button = QPushButton(LENS_BUTTON)
        self.lens_button.clicked.connect(self._on_lens_button)
        self.body.addWidget(self.lens_button)
        self.lens_table = read_only_table(["layer", "top 1 (p)"])      # one row a layer, one column a rank; in place of
        self.lens_table.setVisible(False)                     # the candidates while shown, so it has their room
        self.lens_table.verticalHeader().setDefaultSectionSize(22)
        self.body.addWidget(self.lens_table, 2)
        session.requests.logit_lens_ready.connect(self.show_logit_lens)
        session.requests.candidates_ready.connect(self.show_candidates)
        session.comparison_changed.connect(lambda _c: self._show_before())
        session.experiments_changed.connect(lambda _e: self._show_before())
        self._jobs: dict = {"running": None, "queued": ()}     # the model thread's (RequestQueue.jobs)
        session.requests.jobs_changed.connect(self._on_jobs)
        self._asked: dict[tuple[int, int], tuple] = {}     # (id(step), position) -> (step, ids, probs)
        self._pending: dict[tuple[int, int], object] = {}  # asked, not answered yet -> the step asked about
        self.position: int | None = None
        self._lens_asked = self._lens_shown = None          # the step record a lens was asked of / is shown of
        self.candidates = np.zeros(0, dtype=np.int64)
        self.chosen_rank: int | None = None

    def forget(self) -> None:
        """No candidates or lens of another model or run, and none awaited (a cancel drops the questions)."""
        self._asked.clear()
        self._pending.clear()
        self.position = self._lens_shown = None    # _lens_asked stays: a late lens of that record is refused
        self.candidates = np.zeros(0, dtype=np.int64)
        self.table.setRowCount(0)

    # ----- drawing ----------------------------------------------------------------------------
    def show_selection(self, selection: Selection) -> None:
        trace = self.trace
        if trace is None or not trace.steps:
            self.table.setRowCount(0)
            self.set_formula("p = softmax(h_T W_U)")
            return
        self._step_aside(trace.model.is_encoder_only, trace.model.name)
        if trace.model.is_encoder_only:
            return
        position = trace.n_tokens - 1 if selection.token is None else selection.token
        if selection.step is not None and selection.token is None:
            position = int(trace.steps[selection.step].positions[-1])
        if position != self.position or self._lens_of(trace, position) is not self._lens_shown:
            self._show_lens(False)
        self.position = position
        found = self._candidates(trace, position)
        if found is None:                                   # a prompt position: asked of the model
            self.candidates = np.zeros(0, dtype=np.int64)
            self.table.setRowCount(0)
            self._set_caption(False, f"after position {position} ‘{visible_text(trace.token_text[position])}’: "
                                     "computing the candidates…")
            self.set_formula(f"p = softmax(h_{{{position}}} W_U) ∈ ℝ^{{{trace.model.vocab_size}}}")   # not the last h
            self._show_before()
            step = trace.steps[trace.step_of_position(position)]
            if self._pending.get((id(step), position)) is not step:     # ids of freed steps are reused
                self._pending[(id(step), position)] = step
                self.session.requests.candidates_requested.emit(int(position))
            return
        ids, probs = found
        chosen, forced = self._chosen(trace, position)
        self.candidates = np.asarray(ids)
        hits = np.flatnonzero(self.candidates == chosen) if chosen is not None else []
        self.chosen_rank = int(hits[0]) + 1 if len(hits) else None
        self._fill(ids, probs, chosen)
        self._describe(trace, position, chosen, forced)
        self._show_before()

    def comparison(self):
        """The session's NextTokenComparison when it is of this trace's last position under the experiments
        that are on (and some are), else None."""
        trace, known = self.trace, self.session.comparison
        if trace is None or known is None or self.position != trace.n_tokens - 1:
            return None
        intervention, ids, result = known
        now = active(self.session.experiments)
        same = ids == tuple(int(i) for i in trace.token_ids) and intervention == now
        return result if same and not now.is_empty else None

    def _show_before(self) -> None:
        shown = self.table.isVisibleTo(self)
        result = self.comparison() if shown else None
        waiting = self._awaited_comparison() if shown and result is None else None
        self.before_table.setVisible(result is not None)
        self.compare_label.setVisible(result is not None)
        self.waiting_line.setVisible(waiting is not None)
        self._fit_before_after_height(result is not None)       # again once the rows are in (below)
        self.table.horizontalHeaderItem(1).setText("token" if result is None else "after")
        if waiting is not None:
            self.waiting_line.setText(waiting)
        if result is None:
            return
        name = lambda token_id: visible_text(self.session.display_token(int(token_id)))   # noqa: E731
        self.before_table.setRowCount(len(result.before_ids))
        for row, (token_id, p) in enumerate(zip(result.before_ids, result.before_probs)):
            self.before_table.setItem(row, 0, item := QTableWidgetItem(name(token_id)))
            item.setToolTip(item.text())                 # whole where the column elides it
            self.before_table.setItem(row, 1, QTableWidgetItem(f"{float(p):.4f}"))
        self.before_table.resizeColumnsToContents()
        table = self.before_table
        table.setMaximumWidth(table.horizontalHeader().length() + table.verticalScrollBar().sizeHint().width()
                              + 2 * table.frameWidth())
        self.compare_label.set_plain(
            f"before (without the experiments) → after (the trace, with them): KL(before ‖ after) = {result.kl:.4f}"
            f" nats;  ‘{name(result.token_id)}’ "
            f"logit {result.logit_before:.3f} → {result.logit_after:.3f} (Δ {result.delta_logit:+.3f})")
        self._fit_before_after_height(True)

    def _awaited_comparison(self) -> str | None:
        """What the candidates are while their run was under experiments and no before → after of it is known yet:
        the ablated probabilities read as the model's own for the ~40 s a comparison took (Gemma, 312 tokens;
        drive 21 m20). None where the last position's run had no experiments."""
        trace, intervention = self.trace, self.session.trace_intervention
        if trace is None or intervention.is_empty or self.position != trace.n_tokens - 1:
            return None
        if intervention != active(self.session.experiments):           # turned off or changed: a new run comes
            return f"with experiments ({describe(intervention)}): running again under those on now…"
        running, compare = self._jobs["running"], CompareNextTokenJob.what
        if compare in self._jobs["queued"] and running not in (None, compare):
            return (f"with experiments ({describe(intervention)}): waiting for {running} to finish, then comparing "
                    "to the plain run…")                 # queued on the model thread: say so, not that it compares
        if running != compare and compare not in self._jobs["queued"]:      # nothing compares: none was asked
            return (f"with experiments ({describe(intervention)}): no before → after of this run yet (Compare in "
                    "the Experiments dock)")
        return f"with experiments ({describe(intervention)}): comparing to the plain run…"

    def _on_jobs(self, jobs: dict) -> None:
        self._jobs = jobs
        if self.waiting_line.isVisibleTo(self) and self.comparison() is None:      # a waiting line to say anew
            self._show_before()

    def _fit_before_after_height(self, compared: bool) -> None:
        """While compared, both tables keep ROWS_SEEN rows in sight under their header (and sideways scroll bar,
        where one shows): with the comparison's caption above them they had 2 rows of 22 px each (50 px) in the
        Next token dock at 1366x768 after the translator. Otherwise the candidates ask no more than before."""
        for table in (self.before_table, self.table):
            bar = table.horizontalScrollBar()
            rows = min(ROWS_SEEN, table.rowCount())
            table.setMinimumHeight(rows_height(table, rows if compared else 0,
                                               bar.sizeHint().height() if bar.isVisible() else 0))

    def height_to_read(self) -> int | None:
        """The panel's height with ROWS_SEEN candidates in sight, their table now as tall as that: its minimum is its
        header alone, so that the window's least size fits a 1366x768 screen, and the Tokens panel above gives the
        rows before its own where the column has them. Beside its warning of the characters the translator's
        tokenizer left out they were 2 at 1366x768. Measured on the table as laid out, since the panel's minimum
        lags a caption wrapped anew by up to a line."""
        table = self.table
        if not table.isVisibleTo(self):
            return None
        bar = table.horizontalScrollBar()
        return self.height() + rows_height(table, ROWS_SEEN, bar.sizeHint().height() if bar.isVisible() else 0) \
            - table.height()

    def _step_aside(self, encoder: bool, name: str) -> None:
        """An encoder-only model predicts no next token (and is loaded without a masked-token head): say so and
        what applies instead, with no empty table of candidates to click."""
        for widget in (self.tables_box, self.table, self.lens_button, self.header):
            widget.setVisible(not encoder)
        if encoder:
            self.before_table.setVisible(False)
            self.compare_label.setVisible(False)
            self.waiting_line.setVisible(False)
        if encoder:
            self.candidates = np.zeros(0, dtype=np.int64)
            self.lens_table.setVisible(False)
            self.position_label.setText(
                f"<b>{name} is an encoder</b>: it reads the whole text at once, every token attending to every "
                "other, and predicts no next token; it is loaded without a masked-token (MLM) head, so there "
                "are no candidates to rank or branch on. What applies: <b>Attention</b> (full, both ways), "
                "<b>Q / K / V</b>, <b>Embeddings</b> and the <b>Mask</b> (a full square: nothing is hidden).")

    def _candidates(self, trace, position: int):
        """(ids, probs) after `position`: recorded after each step's last token, otherwise the
        answer the model thread gave for this prompt (kept while the step lives)."""
        recorded = trace.candidates(position)
        if recorded is not None:
            return recorded
        step = trace.steps[trace.step_of_position(position)]
        known = self._asked.get((id(step), position))
        return known[1:] if known is not None and known[0] is step else None

    def show_candidates(self, answer: dict) -> None:
        """The model thread's candidates after a prompt position (`session.requests.candidates_ready`)."""
        trace, position = self.trace, int(answer["position"])
        if trace is None or not 0 <= position < trace.n_tokens or \
                int(trace.token_ids[position]) != int(answer["token"]):
            return                                          # the prompt changed meanwhile
        step = trace.steps[trace.step_of_position(position)]
        live = {id(s) for s in trace.steps}                 # answers for steps still in the trace
        self._asked = {key: value for key, value in self._asked.items() if id(value[0]) in live}
        self._pending = {key: asked for key, asked in self._pending.items() if id(asked) in live}
        self._asked[(id(step), position)] = (step, np.asarray(answer["ids"]), np.asarray(answer["probs"]))
        self._pending.pop((id(step), position), None)
        if position == self.position:
            self.show_selection(self.session.selection)

    def _chosen(self, trace, position: int) -> tuple[int | None, bool]:
        """The token that followed `position` (the next input, or the last step's choice) and if forced."""
        step = trace.steps[trace.step_of_position(position)]
        forced = step.forced and position == int(step.positions[-1])
        if position + 1 < trace.n_tokens:
            return int(trace.token_ids[position + 1]), forced
        return step.chosen_id, forced

    def _fill(self, ids, probs, chosen) -> None:
        self.table.setRowCount(len(ids))
        top = float(probs[0]) if len(probs) else 1.0
        bold = QFont()
        bold.setBold(True)
        chosen_background = chosen_colour(self.palette())
        for rank, (token_id, p) in enumerate(zip(ids, probs)):
            cells = [str(rank + 1), visible_text(self.session.display_token(int(token_id))), str(int(token_id)),
                     f"{float(p):.4f}", ""]
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if int(token_id) == chosen:
                    item.setFont(bold)
                    item.setBackground(QBrush(chosen_background))
                if column == 1:
                    item.setToolTip(text)                # whole where the column elides it (_fit_bars)
                self.table.setItem(rank, column, item)
            self.table.item(rank, 4).setData(SHARE_ROLE, float(p) / max(top, 1e-12))   # painted to scale
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(4, BAR_PX)             # the bars' least room; the last column takes any more
        self._fit_bars()

    def _describe(self, trace, position: int, chosen, forced: bool) -> None:
        is_last = position == trace.n_tokens - 1
        where = f"ranked #{self.chosen_rank}" if self.chosen_rank else "not in the top k"
        name = visible_text(self.session.display_token(chosen)) if chosen is not None else "–"
        in_prompt = position + 1 < trace.steps[0].n_new and trace.steps[0].kind != "decode"
        how = "forced" if forced else ("the prompt continues with" if in_prompt else "chosen")
        self._set_caption(
            False, f"after position {position} ‘{visible_text(trace.token_text[position])}’: {how} ‘{name}’ ({where})"
            + ("   · click a candidate to branch" if is_last else "   · select the last token to branch"))
        k = len(self.candidates)
        self.set_formula(f"p = softmax(h_{{{position}}} W_U) ∈ ℝ^{{{trace.model.vocab_size}}}, top {k} shown")

    def _fit_bars(self) -> None:
        """The bars' column only where it is wholly in sight: cut at the view's edge, two bars longer than the
        part in sight drew the same length (Gemma's tokens beside the before table at 1366x768). Where even the
        rest is wider than the view (the after table's p was cut, in a bare X screen's font at 1366x768), the id
        column goes too, and the token column gives way: its words elided with "…", whole in their tooltips."""
        table, header = self.table, self.table.horizontalHeader()
        asked = [max(table.sizeHintForColumn(c), header.sectionSizeHint(c)) for c in range(4)]
        room = table.viewport().width()
        table.setColumnHidden(4, sum(asked) + BAR_PX > room)
        table.setColumnHidden(2, sum(asked) > room)
        for column in (0, 2, 3):
            table.setColumnWidth(column, asked[column])
        others = asked[0] + asked[3] + (0 if table.isColumnHidden(2) else asked[2])
        table.setColumnWidth(1, max(header.sectionSizeHint(1), min(asked[1], room - others)))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            for table in (self.table, self.before_table):
                fit_row_height(table)
            self._fit_lens_height()

    def eventFilter(self, watched, event) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_bars()
        return super().eventFilter(watched, event)

    # ----- intents -------------------------------------------------------------------------------
    def _clicked(self, row: int, _column: int) -> None:
        trace = self.trace
        if trace is None or self.position is None or row >= len(self.candidates):
            return
        if self.position != trace.n_tokens - 1:
            self.readout.setText("Branching works from the last token: select it first.")
            return
        self.session.requests.force_requested.emit(int(self.candidates[row]))
