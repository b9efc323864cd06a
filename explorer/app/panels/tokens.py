"""Tokens: the token-to-index mapping, as a table and as the text cut into coloured spans.

Shows the live tokens of the prompt being typed (before any run) and, once the
model runs, every token of the trace including the generated ones.

A pasted book is tens of thousands of tokens, so nothing here is made per token
up front: the rows are read from the token arrays when Qt asks for a visible cell
(token_table.py's `TokenTableModel`, a virtual model), and the coloured text shows a window of
SPAN_WINDOW tokens around the selection, with links to the parts before and after.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import QEvent, QTimer, QUrl
from PySide6.QtGui import QColor, QCursor
from PySide6.QtWidgets import QTextBrowser, QToolTip

from explorer.app.panels.base import Panel, WrappedText, visible_text
from explorer.app.panels.tokens_text import count_formula, source_html, source_offset
from explorer.app.state.session import MODEL, RUN, Selection
from explorer.app.widgets.token_pieces import piece_html
from explorer.app.widgets.token_table import (
    TextOverTable,
    TokenRow,
    TokenRows,
    TokenTable,
    bytes_text,
    n_tokens_at,
    token_rows,
)
from explorer.views.token_text import TextPiece, TokenSpan, dropped_characters, dropped_warning, text_pieces

SPAN_WINDOW = 1500          # tokens drawn as coloured spans at once (a rich-text layout grows with each)
LEAST_WIDTH_PX = 220        # the Tokens column's least: at the window's least width (760 px) attention keeps 494 px,
                            # its plots 120 px views (at 320 px, 434: its grid's view was 112 px wide)
WARNING_COLOUR = "#ff6b6b"
ROWS_LEAST = 4              # the table's rows kept in sight before the coloured text is: with the translator's lines
                            # and warning over them, at 1366x768 the text kept its lines and the table 2.9 rows
ROWS_WITH_TEXT = 2          # a decoder's: the coloured text gives way where the table would show fewer whole rows
                            # under it (at the window's least size the table showed one row and a cut one)
ROWS_UNDER_LINES = 2        # an encoder-decoder's table keeps as many whole rows under its lines (it showed 1.6 at
                            # the least size); its pointer readout gives the room (see _show_readout)


class WarningLine(WrappedText):
    """A warning in bold red, wrapped to the panel's width, the whole sentence in its tooltip too. Its text is
    bounded (dropped_warning names at most 40 characters), and it asks for no width, so a long list of left-out
    characters never widens the dock. Drawn on one elided line, the translator's warning read "⚠ Left out by the
    tokeni…" in the 341 px Tokens column at 1366x768, the characters and "the model does not read them" lost."""

    SCALE = 1.0
    SQUEEZED_PX = 0         # never cut, however narrow: its text is bounded, and the column keeps LEAST_WIDTH_PX

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._plain = ""
        palette = self.palette()
        palette.setColor(self.foregroundRole(), QColor(WARNING_COLOUR))
        self.setPalette(palette)
        font = self.font()
        font.setBold(True)
        self.setFont(font)

    def text(self) -> str:
        return self._plain

    def setText(self, text: str) -> None:
        self._plain = text
        super().setText(html.escape(text, quote=False))
        self.setToolTip(text)


class TokensPanel(Panel):
    title = "Tokens"
    object_name = "tokens"
    needs_trace = False              # the prompt's live tokens show before any run
    _lines_shown = False             # an encoder-decoder's lines over the table (_show_translation_lines)

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        self.text_view = QTextBrowser()
        self.text_view.setOpenLinks(False)
        self.text_view.document().setDefaultStyleSheet("a { text-decoration: none; }")
        self.text_view.anchorClicked.connect(self._anchor_clicked)
        self.text_view.highlighted.connect(self._anchor_hovered)
        self.table = TokenTable()
        self.table.selectionModel().selectionChanged.connect(self._table_selected)
        splitter = self.text_over_table = TextOverTable(self.text_view, self.table)
        # The coloured text gives way, rather than being squeezed, where the column is short, and the column keeps
        # LEAST_WIDTH_PX: squeezed to 174 px at the window's least width, the translator's Tokens (its texts
        # wrapped into more lines, and TEXT_LINES of coloured text asked) and Next token asked 787 px of a 768 px
        # screen, and the header and the "Left out by the tokenizer" warning were cut mid-sentence.
        self.setMinimumWidth(LEAST_WIDTH_PX)
        splitter.installEventFilter(self)
        self.translation = WrappedText()      # an encoder-decoder's source and target, as text
        self.translation.setObjectName("translation")
        for text in (self.header, self.translation):    # never cut: the column keeps LEAST_WIDTH_PX, the text gives
            text.SQUEEZED_PX = 0                         # way under them (a long source is the prompt, above)
        self.translation.hide()
        self.dropped = WarningLine()          # characters the vocabulary has no token for, named
        self.dropped.setObjectName("dropped")
        self.dropped.hide()
        self.body.addWidget(self.translation)
        self.body.addWidget(self.dropped)
        self.body.addWidget(splitter, 1)
        self.rows: Sequence[TokenRow] = TokenRows()
        self.highlighted_token: int | None = None
        self.span_window = range(0)           # the positions drawn as coloured spans
        self._shown_html: tuple | None = None   # (the rows' window_key, window, selected, …) of the text view's HTML
        self._shown_tokens = None             # the live Tokens drawn, held so that its id stays its own
        self._shown_source: int | None = None   # the source token lit in the translation line
        self._dropped_for = ()                # the Tokens (or None) whose left-out characters `dropped` names
        self._to_top = False                  # another model or run came: the table starts at its first row
        self._rows_step: int | None = None    # the step whose tokens the rows are (None: the latest)
        self._rows_fresh = True               # whether the rows were made while the trace was the prompt's
        session.out_of_date_changed.connect(self._on_out_of_date_changed)

    def _on_context_changed(self, change) -> None:
        # Set before the base redraws. A step of the same run (TRACE) keeps the person's place, and so do a cancel
        # and an error; another model or run starts at the top: the view's offset outlived the model's reset, and
        # the new model's table opened scrolled part-way (issue 22).
        if change.reason in (MODEL, RUN):
            self._to_top = True
        super()._on_context_changed(change)

    def _on_tokens_changed(self, tokens) -> None:
        self.refresh()

    def _on_out_of_date_changed(self, _reason) -> None:
        """Rows made before the session said whether the trace is the prompt's are made again: a trace the context
        slid along is listed as run only while it is the prompt's, the edited prompt's live tokens otherwise."""
        if self._rows_fresh != (self.session.out_of_date is None):
            self.refresh()

    def eventFilter(self, watched, event) -> bool:
        if watched is self.text_over_table and event.type() == QEvent.Type.Resize:
            self._give_way(event.size().height())
        return super().eventFilter(watched, event)

    def _give_way(self, height: int) -> None:
        """The coloured text shown where the split has room for its TEXT_LINES over the table's least, else hidden,
        the table taking its room (its rows say the same tokens). Under an encoder-decoder's lines (the text then
        asks no least height) the table's least is ROWS_LEAST rows; else ROWS_WITH_TEXT whole rows over its scroll
        bar. A decoder's text keeps its room in the split's least height even where hidden (else the window shrunk
        to its least left attention 109 px): there the table takes it."""
        splitter = self.text_over_table
        giving = self.text_view.minimumHeight() <= 1
        least = self.table.rows_px(ROWS_LEAST) if giving else self.table.with_bar_px(ROWS_WITH_TEXT)
        room = splitter.text_px() + splitter.handleWidth() + least
        self.text_view.setVisible(height >= room)

    def _show_translation_lines(self, shown: bool) -> None:
        """An encoder-decoder's lines over the table: the coloured text then gives way where the column is short
        (a decoder's Tokens keeps its TEXT_LINES, which keep the window tall enough for attention's plots), and
        the table keeps ROWS_UNDER_LINES whole rows over its scroll bar."""
        self._lines_shown = shown
        self.text_view.setMinimumHeight(1 if shown else self.text_over_table.text_px())
        self._keep_rows_under_lines()
        self._show_readout()

    def _show_readout(self) -> None:
        """The pointer's readout line, but under an encoder-decoder's lines: it repeats the coloured text's tooltip,
        and its 16 px give the table its second row there within a 768 px screen (the translator's least window
        was 761 px high, 765 px framed: 8 px more for the row, with the readout, was past the screen; now 753 px)."""
        self.readout.setVisible(self.body_widget.isVisibleTo(self) and not self._lines_shown)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            # Rich text fixes its relative sizes ('large') as it is parsed: drawn again in the new font (View ▸
            # Presentation's), once the text view has it too.
            QTimer.singleShot(0, self, self._draw_text_again)
            QTimer.singleShot(0, self, self._keep_rows_under_lines)        # the rows' height in the new font
        elif event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            QTimer.singleShot(0, self, self._draw_text_again)      # and its links' colour (View ▸ Theme)

    def _keep_rows_under_lines(self) -> None:
        """The table's least, set only where it changes (a step would lay the column out again)."""
        self.table.setMinimumHeight(self.table.with_bar_px(ROWS_UNDER_LINES) if self._lines_shown else 0)

    def _draw_text_again(self) -> None:
        if self._shown_html is not None:
            self._shown_html = None
            self._show_text(self.highlighted_token)

    def show_state(self) -> None:
        """Out of date, this panel alone already shows the edited prompt's tokens (the live tokenisation): the
        note says so, else it reads as if these tokens were the stale ones."""
        super().show_state()
        self._show_readout()
        drawn, tokens, trace = self.drawn(), self.session.tokens, self.session.trace
        if drawn.kind != "out of date" or tokens is None or trace is None or not len(tokens.ids):
            return
        ids = np.asarray(trace.token_ids, dtype=np.int64)[: len(tokens.ids)]
        if not np.array_equal(ids, np.asarray(tokens.ids, dtype=np.int64)):
            self.note.setText(f"⚠ Out of date: {drawn.why} Shown here: the edited prompt's {len(tokens.ids)} "
                              "tokens, not run yet.")

    def redraw(self) -> None:
        self._show_rows()
        self._show_dropped(self.session.tokens)

    def _show_rows(self) -> None:
        """The rows (and the translation's target) as of the step selected, as the attention map and the mask
        show it: at an earlier step (the Mask's step slider, a recording of the window) the table kept the
        latest step's tokens, "T = 24" beside attention's ℝ^{22×22} (issue 22)."""
        self._rows_step, self._rows_fresh = self.session.selection.step, self.session.out_of_date is None
        self.rows = token_rows(self.trace, self.session.tokens, self._rows_step, self._rows_fresh,
                               self.session.token_bytes)
        self._show_translation(self.trace)
        kept = self.table.token_model.set_rows(self.rows)
        self.table.fit_columns(kept)
        if self._to_top:
            self._to_top = False
            self.table.scrollToTop()
        self.set_formula(count_formula(self.rows, self.trace, self._rows_step))

    def _show_translation(self, trace) -> None:
        """Source → target as text: the target is what the decoder chose so far (its <s> and </s> left out)."""
        if trace is None or not trace.steps or trace.encoder is None or not trace.model.is_encoder_decoder:
            self.translation.hide()
            self._show_translation_lines(False)
            return
        if self.session.tokens is not None and len(self.rows) and self._source_offset() is None:
            # The rows are an edited prompt's, not the source translated: the line would read the old source over
            # the new tokens, and at the window's least size its lines (with the out-of-date note) made the window
            # ask 769 px of a 768 px screen. The text's least height stays as under the lines.
            self.translation.hide()
            return
        step = trace.n_steps - 1 if self._rows_step is None else min(self._rows_step, trace.n_steps - 1)
        chosen = [int(i) for i in trace.token_ids[1:n_tokens_at(trace, step)]] + [int(trace.steps[step].chosen_id)]
        target = self.session.decode_text(chosen)
        ended = self.session.decode_text(chosen[-1:]) == "" and len(chosen) > 1
        selected = self.session.selection.source
        self.translation.setText(
            f"<b>Source</b>&nbsp; {source_html(trace.encoder, selected, self.session.decode_text)}<br>"
            f"<b>Target</b>&nbsp; {html.escape(target)}"
            + (f" <i>(ended: {html.escape(self.session.display_token(chosen[-1]))})</i>" if ended else " …"))
        self.translation.show()
        self._show_translation_lines(True)

    def _show_dropped(self, tokens) -> None:
        """Name the characters of the prompt that no token covers: the model never reads them. Scanned once per
        tokenisation (Tokens is frozen): a decoding step keeps the prompt's, and scanning an 8,000-token
        prompt again took 20 ms of every step."""
        if tokens is self._dropped_for:
            return
        self._dropped_for = tokens
        lost = dropped_characters(tokens.spans, tokens.source) if tokens is not None and tokens.source else ""
        self.dropped.setVisible(bool(lost))
        if lost:
            self.dropped.setText(dropped_warning(lost))

    def show_selection(self, selection: Selection) -> None:
        if selection.step != self._rows_step:               # another step: its tokens
            self._shown_source = selection.source
            self._show_rows()
        elif selection.source != self._shown_source:        # the source token picked in a source view
            self._shown_source = selection.source
            self._show_translation(self.trace)
        token = self._row_of(selection)
        self.highlighted_token = token if token is not None and 0 <= token < len(self.rows) else None
        self._show_text(self.highlighted_token)
        if self.highlighted_token is not None:
            self.table.selectRow(token)
            self.table.scrollTo(self.table.token_model.index(token, 0))
        else:
            self.table.clearSelection()

    def _source_offset(self) -> int | None:
        return source_offset(self.trace, self.rows)

    def _row_of(self, selection: Selection) -> int | None:
        """The row the selection points at: its source token where the rows are the source, else its token."""
        offset = self._source_offset()
        if offset is None:
            return selection.token
        return None if selection.source is None else selection.source - offset

    def _select_row(self, row: int) -> None:
        """Select the token of a row: a source token where the rows are the source (not the target token
        at the same index)."""
        offset = self._source_offset()
        self.select(**({"token": row} if offset is None else {"source": row + offset}))

    # ----- the coloured text ----------------------------------------------------------------
    def _show_text(self, selected: int | None, start: int | None = None) -> None:
        """Draw the window of spans that holds `selected` (or starts at `start`); redrawn only when changed."""
        n = len(self.rows)
        if start is None:
            start = self.span_window.start if self.span_window and self.span_window.stop <= n else 0
            if selected is not None and selected not in range(start, min(n, start + SPAN_WINDOW)):
                start = selected - SPAN_WINDOW // 2
        start = max(0, min(start, n - SPAN_WINDOW))
        self.span_window = window = range(start, min(n, start + SPAN_WINDOW))
        # A decoding step makes new rows, but the window's own rows are drawn again only if they changed.
        key = (self.rows.window_key(window) if isinstance(self.rows, TokenRows) else self.rows, window, selected,
               min(n, window.stop + SPAN_WINDOW))
        if key != self._shown_html:
            self._shown_html, self._shown_tokens = key, getattr(self.rows, "_tokens", None)   # (its id in key)
            self.text_view.setHtml(self._html(selected))

    def _html(self, selected: int | None) -> str:
        window, n = self.span_window, len(self.rows)
        parts = []
        if window.start > 0:
            earlier = max(0, window.start - SPAN_WINDOW)
            parts.append(f"<a href='window:{earlier}'><i>◀ tokens {earlier:,}–{window.start - 1:,}</i></a> ")
        pieces = self._pieces(window)
        parts += [piece_html(piece, selected) for piece in pieces]
        if window.stop < n:
            parts.append(f" <a href='window:{window.stop}'><i>tokens {window.stop:,}–"
                         f"{min(n, window.stop + SPAN_WINDOW) - 1:,} ▶</i></a>")
        # pre-wrap: two spaces are two characters of the text, not one gap. 'large' is a step above the
        # panel's font (14 px beside 12), not a pixel size, so the text grows with it in View ▸ Presentation.
        return "<div style='font-size:large; line-height:150%; white-space:pre-wrap'>" + "".join(parts) + "</div>"

    def _pieces(self, window: range) -> list[TextPiece]:
        """The window's pieces: its tokens of the typed text cut by text_pieces (each character once),
        then generated tokens (or tokens with no text to cut) as their display strings."""
        rows = self.rows[window.start:window.stop]
        source = getattr(getattr(self.rows, "_tokens", None), "source", "") or ""
        n_source = getattr(self.rows, "_n_live", 0) if source else 0
        typed = [TokenSpan(row.position, row.span, row.text, row.raw) for row in rows if row.position < n_source]
        first = window.start == 0 and not getattr(self.rows, "cut", 0)     # a cut prompt's left-out text is not run
        pieces = text_pieces(typed, source, first=first, last=window.stop >= n_source) if typed else []
        return pieces + [TextPiece(row.source_text, row.position, marker="" if row.source_text else "∅")
                         for row in rows if row.position >= n_source]

    # ----- intents -----------------------------------------------------------------------
    def _table_selected(self, *_args) -> None:
        rows = {index.row() for index in self.table.selectionModel().selectedIndexes()}
        if len(rows) == 1:
            self._select_row(rows.pop())

    def _anchor_clicked(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("window:") and text[7:].isdigit():
            self._show_text(self.highlighted_token, start=int(text[7:]))
            return
        position = _position_of(url)
        if position is not None:
            self._select_row(position)

    def _anchor_hovered(self, url: QUrl) -> None:
        if url.toString() == "dropped:":
            QToolTip.showText(QCursor.pos(), self.dropped.text(), self.text_view)
            return
        position = _position_of(url)
        if position is None or position >= len(self.rows):
            QToolTip.hideText()
            return
        row = self.rows[position]
        message = (f"position {row.position}, id {row.token_id}: ‘{visible_text(row.text)}’\n"
                   f"bytes: {bytes_text(row.raw)}")
        self.readout.setText(message.replace("\n", "   "))
        QToolTip.showText(QCursor.pos(), message, self.text_view)


def _position_of(url: QUrl) -> int | None:
    text = url.toString()
    if text.startswith("tok:") and text[4:].isdigit():
        return int(text[4:])
    return None
