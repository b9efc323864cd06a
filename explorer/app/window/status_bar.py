"""The status bar: model, parameters, attention variant, device, step, ms per step and trace memory; what an export
wrote ("Saved head.png (640×480 px)") and the window's one error line."""
from __future__ import annotations

import re

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from explorer.app.state.words import plural, step_name
from explorer.app.widgets.token_table import n_tokens_at
from explorer.app.window.error_bar import ErrorLine
from explorer.core.trace import ModelInfo, Trace
from explorer.core.units import human_bytes, human_count


def attention_label(info: ModelInfo) -> str:
    """e.g. 'GQA 9 Q → 3 KV heads', 'MLA d_c=512', 'MHA 12 heads'."""
    kind = info.attention.upper()
    if info.attention == "mla":
        return f"MLA d_c={info.mla_rank}"
    if info.attention in ("gqa", "mqa"):
        return f"{kind} {info.n_heads} Q → {info.n_kv_heads} KV heads"
    return f"{kind} {info.n_heads} heads"


SAVED_MS = 8000         # how long "Saved head.png (640×480 px)" stays up
FIELD_GAP_PX = 6        # the layout's spacing beside each field
NOTICE_ROOM_PX = 320    # the room a notice or the error line is given on the left, the fields elided to make it
YIELD_CHARS = 6         # a field's least while it yields its room to a notice or an error (Field.yielding)
LEAST_CHARS = 8         # a field squeezed to this many digits' width, its text elided: "SmolLM2-…"
MODEL_CHARS = 24        # a model's name longer than this is shortened in its middle where it does not fit


def _short_name(name: str) -> str:
    half = MODEL_CHARS // 2
    return name if len(name) <= MODEL_CHARS else f"{name[:half]}…{name[1 - half:]}"


# Each field's shorter form, drawn where its text does not fit (the text is then its tooltip): at the window's
# least width (760 px) seven fields asked 849 px, and each was cut to "shake…", "step …".
SHORT_FORMS = {
    "model": _short_name,
    "params": lambda text: text.removesuffix(" params"),                                 # 2.56M
    "attention": lambda text: re.sub(r" Q → (\d+) KV heads$", r"→\1", text).replace(" d_c=", " ")
                                .removesuffix(" heads"),                                   # GQA 6→2, MLA 512
    "device": lambda text: re.sub(r"(b?)float(\d+)", r"\1f\2", text),                    # cpu · f32
    "step": lambda text: re.sub(r" tokens?$", " tok", re.sub(r" \(prefill\)| of \d+", "", text)),  # step 0 · 10 tok
    "ms": lambda text: text.replace(" ms/step", " ms"),
    "memory": lambda text: text.removeprefix("trace "),
}
# The fields a person reads first keep their short form whole at any width the window takes, unless they yield to a
# notice or an error (Field.yielding): their least is this text's width (the step's room for three-digit steps and
# four-digit counts, so that decoding does not change the window's least width each step), or their widest short
# form for the model open where that is wider.
WHOLE_AT_LEAST = {"model": "", "step": "step 000 · 0,000 tok"}


class Field(QLabel):
    """A permanent field that keeps the room of the widest text it showed for the model open: the status bar sets
    the window's least width, and a step's italics, or a time one digit shorter, changed it, so a window at that
    width was resized and laid out again twice a decoding step (25 ms at 8,000 tokens). It asks that room as its
    size, and no more than LEAST_CHARS as its least, its text elided below its room: asked as its least, the
    seven fields of a model made the window 864 px wide at least, past an 800 px screen."""

    widest = 0
    short = ""                  # the shorter form drawn where the text does not fit (SHORT_FORMS)
    whole_at_least: str | None = None     # WHOLE_AT_LEAST's text: the least keeps the short form whole
    widest_short = 0

    def show_text(self, text: str, short: str) -> None:
        """Show `text`, or `short` where the field is narrower than `text`; the tooltip says `text` then."""
        self.short = short
        if self.whole_at_least is not None:
            self.widest_short = max(self.widest_short, self._upright().horizontalAdvance(short))
        self.setToolTip(text if short != text else "")
        self.setText(text)

    def _upright(self) -> QFontMetrics:
        upright = QFont(self.font())
        upright.setItalic(False)          # the step's italics while the model works change no least width
        return QFontMetrics(upright)

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        self.widest = max(self.widest, hint.width())
        margins = self.contentsMargins()
        if self.whole_at_least is not None and not self.yielding:
            least = max(self.widest_short, self._upright().horizontalAdvance(self.whole_at_least))
        else:
            least = self._upright().horizontalAdvance("0" * (YIELD_CHARS if self.yielding else LEAST_CHARS))
        return QSize(min(self.widest, least + margins.left() + margins.right()), hint.height())

    def drawn_text(self) -> str:
        """The text where it fits the field, else its short form (elided only where that does not fit either)."""
        text = self.text()
        fits = self.fontMetrics().horizontalAdvance(text) <= self.contentsRect().width()
        return text if fits or not self.short else self.short

    def paintEvent(self, event) -> None:
        room, drawn = self.contentsRect(), self.drawn_text()
        if drawn == self.text() and self.fontMetrics().horizontalAdvance(drawn) <= room.width():
            super().paintEvent(event)
            return
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(room, int(self.alignment()),
                         self.fontMetrics().elidedText(drawn, Qt.TextElideMode.ElideRight, room.width()))

    yielding = False        # asks only YIELD_CHARS: a notice or an error on the left needs the room (StatusLine)

    def room(self) -> int:
        """The width it asks when it does not yield: the widest text it showed."""
        return max(self.widest, super().sizeHint().width())

    def sizeHint(self) -> QSize:
        if self.yielding:
            return self.minimumSizeHint()
        return QSize(self.room(), super().sizeHint().height())


class StatusLine(QStatusBar):
    """Permanent fields on the right; transient messages (notices) on the left, and there, between them,
    the last error's line (the window's error component: one line, Details… for the rest)."""

    FIELDS = ("model", "params", "attention", "device", "step", "ms", "memory")
    UNDER_WAY = "…"          # how a notice says that work is under way: "Opening the session: running its 5 tokens…"

    def __init__(self, parent: QWidget | None = None, session=None) -> None:
        super().__init__(parent)
        self.setObjectName("status_bar")
        # The step the person looks at is the session's selection: the step field follows it as every panel does
        self.session = session
        self._shown: tuple[Trace | None, int | None] | None = None    # (trace, step) the step field shows
        self.fields: dict[str, QLabel] = {}
        self._under_way = ""                 # the notice of work under way shown, until the model is next idle
        self._busy_since_notice = False      # it is the model's work once the model was busy after it was shown
        self._busy = False
        self.error_line = ErrorLine(self)
        self.addWidget(self.error_line, 1)
        self.error_line.changed.connect(self._on_error_changed)
        self.messageChanged.connect(lambda _text: self._make_room())
        for name in self.FIELDS:
            label = Field("")
            label.setObjectName(f"status_{name}")
            label.setContentsMargins(6, 0, 6, 0)
            label.whole_at_least = WHOLE_AT_LEAST.get(name)
            self.fields[name] = label
            self.addPermanentWidget(label)
        self.show_model(None)
        if self.session is not None:
            self.session.selection_changed.connect(self._on_selection_changed)

    def show_model(self, info: ModelInfo | None, device: str = "", dtype: str = "") -> None:
        """The fields of the model now open (None: no model). A model opened or closed clears the error line: what
        it said (a load that failed, a job or an export of the model before) belonged to the action that raised it,
        and it stayed up through three models that opened well after a failed one ("x.gguf is not a GGUF file"),
        and came back red when "The model was closed." went (drive 21 m10: QStatusBar hides it under a notice)."""
        for label in self.fields.values():
            label.widest = label.widest_short = 0      # another model's texts: their own room
        self.error_line.clear()
        if info is None:
            self._set(model="no model", params="", attention="", device="", step="", ms="", memory="")
            return
        self._set(model=info.name, params=f"{human_count(info.n_params)} params", attention=attention_label(info),
                  device=f"{device or info.device} · {dtype or info.dtype}")
        self.fields["model"].setToolTip(f"{info.name}: {info.family}, {info.n_layers} layers, d_model {info.d_model}, "
                                        f"context {info.max_positions:,}")

    def show_trace(self, trace: Trace | None) -> None:
        """The step selected (the latest unless the person went back to an earlier one: "step 0 (prefill) of 2 ·
        22 tokens"), its time, and the whole trace's memory. It said the latest step's "step 2 · 24 tokens" beside
        panels that showed step 0, and so did every frame of a recording of the window (issue 22)."""
        selected = self.session.selection.step if self.session is not None else None
        self._shown = (trace, selected)
        if trace is None or not trace.steps:
            self._set(step="not run", ms="", memory="")
            return
        last = trace.n_steps - 1
        step = last if selected is None else min(selected, last)
        of = f" of {last}" if step < last else ""
        self._set(step=f"{step_name(step)}{of} · {plural(n_tokens_at(trace, step), 'token')}",
                  ms=f"{trace.steps[step].ms:.0f} ms/step", memory=f"trace {human_bytes(trace.nbytes())}")

    def _on_selection_changed(self, selection) -> None:
        if self._shown is None:                     # no trace was shown yet: the window shows it as it comes
            return
        trace, step = self._shown
        if trace is self.session.trace and step != selection.step:      # another step: say it
            self.show_trace(trace)

    def showMessage(self, text: str, timeout: int = 0) -> None:
        """A notice; one that says work is under way (it ends in "…") lasts as long as that work, until the model
        is next idle, whatever `timeout` asks: a timed one went on saying "running" after the run had ended, or
        would vanish while a long one still ran."""
        self._under_way = text if text.endswith(self.UNDER_WAY) else ""
        self._busy_since_notice = self._busy
        super().showMessage(text, 0 if self._under_way else timeout)

    def _on_error_changed(self, message: str) -> None:
        """An error shown ends the notice on its left, and has room: the error line is shown by hand, over a
        notice's text (QStatusBar hides its widgets only when the notice comes), and "Saved head.png" was drawn
        across "Cannot write head.png: the disk is full"."""
        if message and self.currentMessage():
            self.clearMessage()
            self._under_way = ""
        self._make_room()

    def _make_room(self) -> None:
        """Where the fields' room leaves a notice or the error line less than NOTICE_ROOM_PX, the fields yield to
        their least (elided): at 796 px they left both 0 px wide, "Saved head.png" and "Cannot write head.png"
        unseen. Their least only shrinks, so the window keeps its least width and its size; none yields at 1366 px."""
        fields = [field for field in self.fields.values() if not field.isHidden()]
        spare = self.width() - sum(field.room() + FIELD_GAP_PX for field in fields)
        wanted = bool(self.currentMessage() or self.error_line.message)
        yielding = wanted and spare < NOTICE_ROOM_PX
        if any(field.yielding != yielding for field in fields):
            for field in self.fields.values():
                field.yielding = yielding
                field.updateGeometry()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._make_room()

    def show_saved(self, line: str) -> None:
        """What an export wrote, one line ("Saved head.png (640×480 px)"), for SAVED_MS: a save said nothing, so
        a person could not tell a written file from a cancelled dialog."""
        self.showMessage(line, SAVED_MS)

    def show_busy(self, busy: bool) -> None:
        """The step field in italics while the model works (a font, not a style sheet: re-applying a
        style sheet twice a step re-polished the status bar, milliseconds each time); idle again after the
        work a notice announced, the notice goes."""
        label = self.fields["step"]
        font = label.font()
        if font.italic() != busy:
            font.setItalic(busy)
            label.setFont(font)
        self._busy = busy
        if busy:
            self._busy_since_notice = True
        elif self._under_way and self._busy_since_notice:
            if self.currentMessage() == self._under_way:
                self.clearMessage()
            self._under_way = ""

    def _set(self, **texts: str) -> None:
        for name, text in texts.items():
            self.fields[name].show_text(text, SHORT_FORMS[name](text))
            self.fields[name].setVisible(bool(text))

