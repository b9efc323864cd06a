"""The Tokens panel's table: one row per token (position, display text, id, character span), made on demand.

A pasted book is tens of thousands of tokens, so no row is made up front: `TokenRows` reads a row from
the token arrays when asked, and `TokenTableModel` is a virtual Qt model that asks only for the cells Qt
paints. A decoding step only adds rows, and the model inserts them rather than resetting the view.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QSize, Qt, QTimer
from PySide6.QtWidgets import QAbstractItemView, QSplitter, QTableView, QTableWidgetItem, QTextEdit

from explorer.core import trace_rows

COLUMNS = ("position", "token", "id", "span")
ROWS_IN_SIGHT = 6           # the rows the table keeps in sight: fewer and a person scrolls to read a short prompt
ROWS_ASKED = ROWS_IN_SIGHT + 1      # asked for before a run: the panel's formula then takes a second line
ROWS_LEAST_WHOLE = 1        # the whole rows the table keeps at its least, under its header and over its scroll bar
TEXT_LINES = 3              # the lines of coloured text over the table, where the two share too little height
TABLE_SHARE = 0.6           # the table's share of the height the two share, where both have room
ROW_PAD_PX = 8              # a row's room above and below its line of text


def fit_row_height(table: QTableView) -> None:
    """Rows one line of the table's font high, with room around it: the style's default is 30 px whatever the
    font (a 9 pt line is 15), which left six rows of a short prompt 180 px. Again after a font change (View ▸
    Presentation)."""
    header = table.verticalHeader()
    height = table.fontMetrics().lineSpacing() + ROW_PAD_PX
    header.setMinimumSectionSize(min(header.minimumSectionSize(), height))
    header.setDefaultSectionSize(height)


@dataclass(frozen=True)
class TokenRow:
    position: int
    text: str                 # display string (spaces, newlines, bytes made visible)
    token_id: int
    span: tuple[int, int] | None
    raw: bytes | None
    special: bool
    source_text: str          # the characters of the text it covers (display text if unknown)


class TokenRows(Sequence):
    """The rows to show, made on demand: the live tokens of the prompt, then the trace's generated tokens."""

    def __init__(self, tokens=None, generated_ids=(), generated_text=(), cut: int = 0, slid: bool = False,
                 token_bytes=None) -> None:
        self._tokens = tokens
        self._token_bytes = token_bytes    # the tokenizer's id -> bytes (b"" special, None unknown), where known
        self.cut = cut             # the prompt's first tokens left out: the model ran its last ones only
        self.slid = slid           # left out as the context slid (Continue from the last N tokens?), not cut
        self._n_live = len(tokens.ids) - cut if tokens is not None else 0
        live = np.asarray(tokens.ids, dtype=np.int64)[cut:] if tokens is not None else np.zeros(0, np.int64)
        self.ids = np.concatenate([live, np.asarray(generated_ids, dtype=np.int64)])     # (n,)
        self._generated_text = tuple(generated_text)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def cut_note(self) -> str:
        """What the rows leave out of the prompt, in words ('' when nothing)."""
        if self.slid:
            generated = len(self) - self._n_live
            if not self._n_live:
                return (f"the context slid: the prompt's {self.cut:,} tokens left it, and tokens generated after "
                        "them; the model runs from tokens it generated")
            return (f"the context slid: the prompt's first {self.cut:,} tokens left it; the model runs from its last "
                    f"{self._n_live:,}, then {generated:,} generated")
        if self.cut:
            return f"the prompt's first {self.cut:,} tokens were cut: the model ran its last {self._n_live:,}"
        return ""

    def window_key(self, window: range) -> tuple:
        """What the rows in `window` show, to compare with another TokenRows' (equal: the same rows)."""
        start, stop = max(0, window.start - self._n_live), max(0, window.stop - self._n_live)
        return (id(self._tokens), self.cut, self.ids[window.start:window.stop].tobytes(),
                self._generated_text[start:stop])

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index >= self._n_live:
            text, token_id = self._generated_text[index - self._n_live], int(self.ids[index])
            # Only the tokenizer knows a generated token's bytes: its display string spells a special token's
            # name (<|endoftext|>), and draws a space and the character '␣' alike. With none, they are unknown.
            raw = self._token_bytes(token_id) if self._token_bytes is not None else None
            return TokenRow(index, text, token_id, None, raw, raw == b"", written_text(text, raw))
        return _live_row(self._tokens, index, self.cut)


def written_text(display: str, raw: bytes | None) -> str:
    """The characters a generated token writes, as the coloured text draws a typed token's: its bytes as UTF-8
    (a space a space, not the table's '␣'). Its display string where the bytes are not whole characters (they
    end one a later token ends), are unknown, or are none (a special token: its name)."""
    try:
        return raw.decode("utf-8") or display if raw else display
    except UnicodeDecodeError:
        return display


def token_rows(trace, tokens, upto_step: int | None = None, fresh: bool = True, token_bytes=None) -> TokenRows:
    """The prompt's live tokens while they differ from the trace; else the trace's tokens as of step `upto_step`
    (None: the latest), as every other view of that step counts them. `fresh`: the trace is the prompt's (the
    session does not call it out of date), so a trace that the context slid along is this prompt's too.
    `token_bytes`: the tokenizer's id -> bytes, which a generated token's row names."""
    live = TokenRows(tokens) if tokens is not None else TokenRows()
    if trace is None or not trace.steps:
        return live
    ids = np.asarray(trace.token_ids, dtype=np.int64)
    cut = _cut(trace, live.ids) if tokens is not None else 0
    kept, slid = len(live) - cut, False
    if tokens is not None and (not kept or not np.array_equal(ids[:kept], live.ids[cut:])):
        kept = _typed_in_slid(trace, live.ids) if fresh and len(live) else None
        if kept is None:
            return live                               # the person has edited (or emptied) the prompt since the run
        cut, slid = len(live) - kept, True
    n = max(kept, n_tokens_at(trace, upto_step))
    return TokenRows(tokens, ids[kept:n], trace.token_text[kept:n], cut, slid, token_bytes)


def n_tokens_at(trace, step: int | None) -> int:
    """T as of `step` (None: the latest): the tokens the model had read once that step ran."""
    return trace.n_tokens if step is None else trace_rows.n_keys(trace, step)      # the positions read by then


def _cut(trace, prompt: np.ndarray) -> int:
    """How many of the prompt's first tokens the trace left out: a prompt past the context (or the memory
    budget) is run as its last tokens where the person agrees, and its rows are those, at positions from 0."""
    if trace.model.is_encoder_decoder:
        return 0
    started = np.asarray(trace.steps[0].token_ids, dtype=np.int64)
    cut = len(prompt) - len(started)
    return cut if 0 < cut and np.array_equal(prompt[cut:], started) else 0


def _typed_in_slid(trace, prompt: np.ndarray) -> int | None:
    """How many of the prompt's last tokens begin a trace that the context slid along (prompt_fit's "Continue from
    the last N tokens?": its prefill is the last N of the prompt and the tokens generated after it), 0 where all of
    them slid out; None for a trace that cannot be such a slide (an encoder-decoder's)."""
    if trace.model.is_encoder_decoder:
        return None
    started = np.asarray(trace.steps[0].token_ids, dtype=np.int64)
    most = min(len(prompt), len(started) - 1)         # a slide's prefill holds at least one generated token
    if most < 1:
        return 0
    # The longest overlap first (a repeated text overlaps at several lengths). Candidates begin and end as the
    # prefill does; only those are compared whole (a slid trace asks again at every step).
    tail = prompt[len(prompt) - most:]
    starts = np.flatnonzero(tail == started[0])                  # (c,)
    starts = starts[started[most - starts - 1] == tail[-1]]
    for start in starts:
        typed = most - int(start)
        if np.array_equal(tail[start:], started[:typed]):
            return typed
    return 0


def _live_row(tokens, position: int, cut: int = 0) -> TokenRow:
    """The row at `position` of the prompt's tokens run, the prompt's token `position + cut`."""
    i = position + cut
    source = getattr(tokens, "source", "") or ""
    spans, raws = getattr(tokens, "spans", None), getattr(tokens, "raw", None)
    special = getattr(tokens, "special", None)
    span = tuple(int(v) for v in spans[i]) if spans and spans[i] is not None else None
    covered = source[span[0]: span[1]] if source and span and span[1] > span[0] else tokens.text[i]
    return TokenRow(position, tokens.text[i], int(tokens.ids[i]), span, raws[i] if raws else None,
                    bool(special[i]) if special is not None else False, covered)


def _extends(old: Sequence[TokenRow], new: Sequence[TokenRow]) -> bool:
    """Whether `new` holds `old`'s rows unchanged, then possibly more."""
    if not (isinstance(old, TokenRows) and isinstance(new, TokenRows)) or not len(old) or len(new) < len(old):
        return False
    return (old._tokens is new._tokens and old._n_live == new._n_live and old.cut == new.cut
            and np.array_equal(old.ids, new.ids[: len(old)])
            and new._generated_text[: len(old._generated_text)] == old._generated_text)


def bytes_text(raw: bytes | None) -> str:
    if raw is None:
        return "bytes unknown"
    return raw.hex(" ") or "(no bytes: special token)"


def cell_text(row: TokenRow, column: int) -> str:
    if column == 0:
        return str(row.position)
    if column == 1:
        return row.text
    if column == 2:
        return str(row.token_id)
    return span_text(row)


def span_text(row: TokenRow) -> str:
    """The characters a row's token covers, "start–end"; "added" for a special token the tokenizer put in
    ([CLS], [SEP], BOS: its offsets are (0, 0), which read as the text's first character even at its end),
    "—" for another token that covers none, "generated" for a token the model chose."""
    if row.span is None:
        return "generated"
    if row.span[1] > row.span[0]:
        return f"{row.span[0]}–{row.span[1]}"
    return "added" if row.special else "—"


class TokenTableModel(QAbstractTableModel):
    """The token table as a virtual model: a cell is made from the rows only when Qt paints it."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: Sequence[TokenRow] = TokenRows()

    def set_rows(self, rows: Sequence[TokenRow]) -> int:
        """Show `rows`; returns how many of the first rows stayed as they were. Rows that only add to
        the old ones (a decoding step) are inserted, which keeps the view's layout and selection;
        anything else resets the model."""
        kept = len(self.rows) if _extends(self.rows, rows) else 0
        if kept and len(rows) > kept:
            self.beginInsertRows(QModelIndex(), kept, len(rows) - 1)
            self.rows = rows
            self.endInsertRows()
        elif not kept or len(rows) != kept:
            self.beginResetModel()
            self.rows = rows
            self.endResetModel()
            kept = 0
        else:
            self.rows = rows
        return kept

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        row = self.rows[index.row()]
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"bytes: {bytes_text(row.raw)}"
        return cell_text(row, index.column())

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None


class TokenTable(QTableView):
    """The table view, with the two reading calls of the QTableWidget it replaced (`rowCount`, `item`)."""

    def __init__(self) -> None:
        super().__init__()
        self.token_model = TokenTableModel(self)
        self.setModel(self.token_model)
        self.verticalHeader().setVisible(False)
        for header in (self.horizontalHeader(), self.verticalHeader()):
            header.setResizeContentsPrecision(100)    # columns fit the rows in sight and 100 more, not every row
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.horizontalHeader().setStretchLastSection(True)
        # a row is selected whole, so every column "intersects the selection": Qt drew every header bold while a
        # row was selected, which read as a font Presentation had left behind (drive21 m14)
        self.horizontalHeader().setHighlightSections(False)
        fit_row_height(self)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            fit_row_height(self)
            # columns as wide as their cells in the new font: after View ▸ Presentation was turned off they kept
            # its widths, and the id and span columns went out of sight behind a scroll bar
            QTimer.singleShot(0, self, self.resize_columns)

    def rows_px(self, rows: int) -> int:
        """The height that shows the header and `rows` rows."""
        return (self.horizontalHeader().sizeHint().height() + rows * self.verticalHeader().defaultSectionSize()
                + 2 * self.frameWidth())

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self.rows_px(ROWS_ASKED))

    def minimumSizeHint(self) -> QSize:
        """At least the header and ROWS_LEAST_WHOLE whole rows over a horizontal scroll bar (the four columns need
        one in a narrow column). The scroll area's own least does not follow the font, and a larger one (View ▸
        Presentation) makes the header and rows taller. The bar's room is kept whether it shows or not, so
        that the least height does not follow the columns' widths."""
        least = super().minimumSizeHint()
        return QSize(least.width(), max(least.height(), self.with_bar_px(ROWS_LEAST_WHOLE)))

    def with_bar_px(self, rows: int) -> int:
        """The height that shows the header and `rows` whole rows over a horizontal scroll bar."""
        return self.rows_px(rows) + self.horizontalScrollBar().sizeHint().height()

    def resize_columns(self) -> None:
        """Every column as wide as its cells, the last one then stretched to the edge again: fitting sized the
        last section to its cells too, and Qt stretched it again only when the view was next resized, so after
        Presentation off the span column stayed ~70 px with blank room beside it (drive21 m14)."""
        self.resizeColumnsToContents()
        header = self.horizontalHeader()
        header.setStretchLastSection(False)
        header.setStretchLastSection(True)

    def fit_columns(self, kept: int) -> None:
        """Columns as wide as their contents. After rows were only added, only a column whose new cells
        are wider than it is fitted again (fitting every column measured every row in sight, each step)."""
        rows = self.token_model.rows
        if not kept:
            self.resize_columns()
            return
        focus_margin = self.style().pixelMetric(self.style().PixelMetric.PM_FocusFrameHMargin)
        metrics, margin = self.fontMetrics(), 2 * focus_margin + 4
        for column in range(len(COLUMNS) - 1):                  # the last column stretches to the edge
            widest = max((metrics.horizontalAdvance(cell_text(rows[i], column)) for i in range(kept, len(rows))),
                         default=0)
            if widest + margin > self.columnWidth(column):
                self.resizeColumnToContents(column)

    def rowCount(self) -> int:
        return self.token_model.rowCount()

    def item(self, row: int, column: int) -> QTableWidgetItem | None:
        """A copy of one cell (its text and tooltip), for scripts and tests."""
        if not (0 <= row < self.rowCount() and 0 <= column < len(COLUMNS)):
            return None
        index = self.token_model.index(row, column)
        item = QTableWidgetItem(self.token_model.data(index))
        item.setToolTip(self.token_model.data(index, Qt.ItemDataRole.ToolTipRole))
        return item


class TextOverTable(QSplitter):
    """The coloured text over the token table, split so that the table keeps ROWS_IN_SIGHT rows while the text
    keeps TEXT_LINES lines, and the table TABLE_SHARE of the rest. Qt's splitter shares a squeeze in proportion,
    and in the Tokens dock beside Next token at 1366x768 the table showed two rows. Once the person drags
    the handle, the split is theirs."""

    def __init__(self, text: QTextEdit, table: TokenTable) -> None:
        super().__init__(Qt.Orientation.Vertical)
        self.text, self.table = text, table
        self.addWidget(text)
        self.addWidget(table)
        text.setMinimumHeight(self.text_px())
        self.dragged = False
        self.splitterMoved.connect(self._moved)

    def _moved(self, *_args) -> None:
        self.dragged = True

    def text_px(self) -> int:
        margin = 2 * (self.text.frameWidth() + int(self.text.document().documentMargin()))
        return TEXT_LINES * self.text.fontMetrics().lineSpacing() + margin

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self.text_px() + self.handleWidth() + self.table.sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        """The text's least over the table's, whether the text shows or has given way (hidden, it leaves its room
        to the table's rows rather than to the window's least height, which keeps attention's plots tall). A text
        that asks no least (under an encoder-decoder's lines) leaves the splitter's own."""
        hint = super().minimumSizeHint()
        if self.text.minimumHeight() <= 1:
            return hint
        least = self.text.minimumHeight() + self.handleWidth() + self.table.minimumSizeHint().height()
        return QSize(hint.width(), least)

    def shares(self, height: int) -> list[int]:
        """The text's and the table's heights in `height` (handle included)."""
        room = height - self.handleWidth()
        table = max(self.table.sizeHint().height(), int(TABLE_SHARE * room))
        table = min(table, room - min(self.text_px(), room // 2))
        return [room - table, table]

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if not self.dragged and not self.text.isHidden():
            self.setSizes(self.shares(self.height()))
