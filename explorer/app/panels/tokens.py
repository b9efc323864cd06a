"""Tokens: the token-to-index mapping, as a table and as the text cut into coloured spans.

Shows the live tokens of the prompt being typed (before any run) and, once the
model runs, every token of the trace including the generated ones.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QSplitter, QTableWidget, QTableWidgetItem, QTextBrowser, QToolTip

from explorer.app.panels.base import Panel
from explorer.app.session import Selection

SPAN_COLOURS = ("#2d4f7c", "#5a3d6e", "#2f6a4f", "#7a4a2a", "#3f5f6f", "#6e3b4f")
SELECTED = "#ffb000"


@dataclass(frozen=True)
class TokenRow:
    position: int
    text: str                 # display string (spaces, newlines, bytes made visible)
    token_id: int
    span: tuple[int, int] | None
    raw: bytes | None
    special: bool
    source_text: str          # the characters of the text it covers (display text if unknown)


def token_rows(trace, tokens) -> list[TokenRow]:
    """The prompt's live tokens while they differ from the trace; else the trace's tokens."""
    live = _live_rows(tokens) if tokens is not None else []
    if trace is None or not trace.steps:
        return live
    ids = [int(i) for i in trace.token_ids]
    if live and ids[: len(live)] != [row.token_id for row in live]:
        return live                                   # the person has edited the prompt since the run
    rows = list(live)
    for position in range(len(live), len(ids)):
        text = trace.token_text[position]
        rows.append(TokenRow(position, text, ids[position], None, None, False, text))
    return rows


def _live_rows(tokens) -> list[TokenRow]:
    source = getattr(tokens, "source", "") or ""
    spans = getattr(tokens, "spans", None) or [None] * len(tokens.ids)
    raws = getattr(tokens, "raw", None) or [None] * len(tokens.ids)
    special = getattr(tokens, "special", None)
    rows = []
    for i, token_id in enumerate(tokens.ids):
        span = tuple(int(v) for v in spans[i]) if spans[i] is not None else None
        covered = source[span[0]: span[1]] if source and span and span[1] > span[0] else tokens.text[i]
        rows.append(TokenRow(i, tokens.text[i], int(token_id), span, raws[i],
                             bool(special[i]) if special is not None else False, covered))
    return rows


def bytes_text(raw: bytes | None) -> str:
    if raw is None:
        return "bytes unknown"
    return " ".join(f"{b:02x}" for b in raw) or "(no bytes: special token)"


class TokensPanel(Panel):
    title = "Tokens"
    object_name = "tokens"

    def __init__(self, session, parent=None) -> None:
        super().__init__(session, parent)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.text_view = QTextBrowser()
        self.text_view.setOpenLinks(False)
        self.text_view.document().setDefaultStyleSheet("a { text-decoration: none; }")
        self.text_view.anchorClicked.connect(self._anchor_clicked)
        self.text_view.highlighted.connect(self._anchor_hovered)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["position", "token", "id", "span"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.itemSelectionChanged.connect(self._table_selected)
        splitter.addWidget(self.text_view)
        splitter.addWidget(self.table)
        splitter.setSizes([120, 300])
        self.body.addWidget(splitter, 1)
        self.rows: list[TokenRow] = []
        self.highlighted_token: int | None = None

    def _on_tokens_changed(self, tokens) -> None:
        self.refresh()

    def redraw(self) -> None:
        self.rows = token_rows(self.trace, self.session.tokens)
        self.table.setRowCount(len(self.rows))
        for r, row in enumerate(self.rows):
            span = f"{row.span[0]}–{row.span[1]}" if row.span else "generated"
            for c, text in enumerate((str(row.position), row.text, str(row.token_id), span)):
                item = QTableWidgetItem(text)
                item.setToolTip(f"bytes: {bytes_text(row.raw)}")
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        n = len(self.rows)
        self.set_formula(f"x = tokenize(text) = (x_1, …, x_{{{n}}}),  x_i ∈ {{0, …, V−1}}, T = {n}")

    def show_selection(self, selection: Selection) -> None:
        token = selection.token
        self.highlighted_token = token if token is not None and token < len(self.rows) else None
        self.text_view.setHtml(self._html(token))
        if token is not None and token < len(self.rows):
            self.table.selectRow(token)
            self.table.scrollToItem(self.table.item(token, 0))
        else:
            self.table.clearSelection()

    def _html(self, selected: int | None) -> str:
        parts = []
        for row in self.rows:
            colour = SELECTED if row.position == selected else SPAN_COLOURS[row.position % len(SPAN_COLOURS)]
            fg = "#000000" if row.position == selected else "#ffffff"
            # A token of only invisible characters (U+0085, zero-width marks) would leave an empty,
            # unclickable anchor: show its display string instead.
            source = row.source_text
            visible = source.strip() or (source and source.isprintable()) or "\n" in source
            shown = source if visible else row.text
            text = html.escape(shown).replace("\n", "↵<br>")
            parts.append(f"<a href='tok:{row.position}'><span style='background-color:{colour};"
                         f" color:{fg}'>{text}</span></a>")
        return "<div style='font-size:14px; line-height:150%'>" + "".join(parts) + "</div>"

    # ----- intents -----------------------------------------------------------------------
    def _table_selected(self) -> None:
        rows = {index.row() for index in self.table.selectedIndexes()}
        if len(rows) == 1:
            self.select(token=rows.pop())

    def _anchor_clicked(self, url: QUrl) -> None:
        position = _position_of(url)
        if position is not None:
            self.select(token=position)

    def _anchor_hovered(self, url: QUrl) -> None:
        position = _position_of(url)
        if position is None or position >= len(self.rows):
            QToolTip.hideText()
            return
        row = self.rows[position]
        message = f"position {row.position}, id {row.token_id}: {row.text!r}\nbytes: {bytes_text(row.raw)}"
        self.readout.setText(message.replace("\n", "   "))
        QToolTip.showText(QCursor.pos(), message, self.text_view)


def _position_of(url: QUrl) -> int | None:
    text = url.toString()
    if text.startswith("tok:") and text[4:].isdigit():
        return int(text[4:])
    return None
