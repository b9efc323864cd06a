"""The status bar: model, parameters, attention variant, device, step, ms per step and trace memory; what an export
wrote ("Saved head.png (640×480 px)") and the window's one error line."""
from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import QLabel, QSizeGrip, QStatusBar, QStyle, QStyleOption, QToolTip, QWidget

from explorer.app.widgets.token_table import n_tokens_at
from explorer.app.window.error_bar import ErrorLine
from explorer.core.trace import ModelInfo, Trace
from explorer.core.units import human_bytes, human_count
from explorer.views.words import plural, step_name


def attention_label(info: ModelInfo) -> str:
    """e.g. 'GQA 9 Q → 3 KV heads', 'MLA d_c=512', 'MHA 12 heads'."""
    kind = info.attention.upper()
    if info.attention == "mla":
        return f"MLA d_c={info.mla_rank}"
    if info.attention in ("gqa", "mqa"):
        return f"{kind} {info.n_heads} Q → {info.n_kv_heads} KV heads"
    return f"{kind} {info.n_heads} heads"


SAVED_MS = 8000         # how long "Saved head.png (640×480 px)" stays up
NOTICE_ROOM_PX = 320    # the most room a notice or the error line takes on the left; the fields shorten to leave it
# Before QStatusBar has laid the fields out (StatusLine._estimated_box); after, each is read from the fields' places
BOX_LEAD_PX = 2         # QStatusBar's spacing before its first widget, inside the box the fields are laid out in
GAP_PX = 6              # that box's spacing between two fields, and between it and the size grip
MESSAGE_LEFT_PX = 6     # where QStatusBar draws a notice from (QStatusBarPrivate::messageRect)
MESSAGE_END_PX = 2      # and how far left of the first permanent field it ends
MESSAGE_RIGHT_PX = 12   # or short of the bar's right end, where no size grip is shown
DROPPED = -1            # a field's form index when it gives up its place (StatusLine._fit)


def _model_forms(name: str) -> tuple[str, ...]:
    """The name, then its leading parts, whole words at its separators: "Qwen2.5-0.5B-Instruct", "Qwen2.5-0.5B",
    "Qwen2.5" (the whole name is the tooltip's first words)."""
    cuts = [match.start() for match in re.finditer(r"[-_]", name) if match.start() > 0]
    return (name, *(name[:cut] for cut in reversed(cuts)))


def _attention_forms(text: str) -> tuple[str, ...]:
    short = re.sub(r" Q → (\d+) KV heads$", r"→\1", text).replace(" d_c=", " ").removesuffix(" heads")
    return text, short, text.split(" ")[0]                                       # GQA 6→2, GQA; MLA 512, MLA


def _step_forms(text: str) -> tuple[str, ...]:
    short = re.sub(r" tokens?$", " tok", re.sub(r" \(prefill\)| of \d+", "", text))  # step 0 · 10 tok
    return text, short, short.removeprefix("step ").removesuffix(" tok")          # 0 · 10


# Each field's forms, longest first, each whole: where the fields do not fit the bar they step down these forms
# and then give up their place, in SHRINK_ORDER. At 799 px beside an error line each of them was cut to 6 digits:
# "shak…", "MQA …", "cpu · …", "step …", "1.77 …" (drive21 m12).
FORMS = {
    "model": _model_forms,
    "params": lambda text: (text, text.removesuffix(" params")),                             # 2.56M
    "attention": _attention_forms,
    "device": lambda text: (text, re.sub(r"(b?)float(\d+)", r"\1f\2", text), text.split(" · ")[0]),  # cpu · f32, cpu
    "step": _step_forms,
    "ms": lambda text: (text, text.replace(" ms/step", " ms")),                              # 278 ms
    "memory": lambda text: (text, text.removeprefix("trace ")),                              # 93 KiB
}
# (field, form) moves, made one at a time until the fields fit: first every field's short form, then the least read
# give up their place. The parameter count and the device go first (the device after "cpu"): they are facts of the
# model open that the model's tooltip and the toolbar's "on cpu float32" also show, and the step's "3 · 31" says
# less. The trace's memory and time per step go next: they change as the person steps, but are read less than what
# is looked at. The attention variant is the subject of the app, so it stays while it can, as "MQA" at last. The
# step and the model say what the panels show and are never dropped (KEPT): at the window's least width (760 px)
# they keep a whole form beside NOTICE_ROOM_PX.
SHRINK_ORDER = (
    ("params", 1), ("device", 1), ("memory", 1), ("ms", 1), ("attention", 1), ("step", 1),
    ("params", DROPPED), ("device", 2), ("attention", 2), ("device", DROPPED), ("step", 2), ("memory", DROPPED),
    ("model", 1), ("ms", DROPPED), ("model", 2), ("attention", DROPPED), ("model", 99),
)
# The fields never dropped, and the text each asks as its least width ("": its shortest form)
KEPT = {"model": "", "step": "000 · 0,000"}


class Field(QLabel):
    """A permanent field: its whole text (`text()`), and the whole shorter forms the status bar draws instead where
    the window is narrow (StatusLine._fit); the tooltip says the whole text then. It asks the room of the form drawn
    as its size, and as its least no width, or a kept field's shortest form's (minimumSizeHint): the fields' whole
    texts as their least once made the window 864 px wide at least, past an 800 px screen. Each form keeps the room
    of the widest text it showed for the model open, so that a time one digit shorter or the step's italics do not
    shift the fields each decoding step."""

    def __init__(self, least: str | None = None) -> None:
        super().__init__("")
        self.least = least                     # KEPT's text: the field is never dropped and asks it as its least
        self.forms: tuple[str, ...] = ("",)
        self.form = 0                          # the index into forms drawn, or DROPPED
        self.widest: dict[int, int] = {}       # form index: the widest text it showed for the model open

    def show_text(self, text: str, forms: tuple[str, ...]) -> None:
        """Show `text`, or one of its shorter `forms` where the status bar says so; the tooltip says `text` then."""
        self.forms = tuple(dict.fromkeys(form for form in forms if form)) or (text,)
        metrics = self.fontMetrics()
        for index, form in enumerate(self.forms):
            self.widest[index] = max(self.widest.get(index, 0), metrics.horizontalAdvance(form))
        self.setToolTip(text if len(self.forms) > 1 else "")
        self.setText(text)

    def forget_widths(self) -> None:
        """Another model's texts have their own room."""
        self.widest.clear()

    def room(self, form: int) -> int:
        """The width the field asks drawing `form` (the last form beyond them), margins included; 0 when dropped."""
        if form == DROPPED or not self.text():
            return 0
        index = min(form, len(self.forms) - 1)
        margins = self.contentsMargins()
        widest = self.widest.get(index, 0) + margins.left() + margins.right()
        return max(widest, self.text_room(self.forms[index]), self.minimumSizeHint().width())

    def text_room(self, text: str) -> int:
        """`text`'s width in the field's font now, margins included."""
        margins = self.contentsMargins()
        return self.fontMetrics().horizontalAdvance(text) + margins.left() + margins.right()

    def draw_form(self, form: int) -> None:
        """Draw `form` (DROPPED: give up the field's place, hidden)."""
        if form != self.form:
            self.form = form
            self.updateGeometry()
            self.update()
        self.setVisible(bool(self.text()) and form != DROPPED)

    def minimumSizeHint(self) -> QSize:
        """No width, or a kept field's shortest form's (the step's KEPT text, as wide as three-digit steps and
        four-digit counts), upright: the step's italics while the model works, or a step one digit longer, changed
        the window's least width where the status bar set it, and the window was laid out again twice a step."""
        height = super().minimumSizeHint().height()
        if self.least is None or not self.text():
            return QSize(0, height)
        upright = QFont(self.font())
        upright.setItalic(False)
        margins = self.contentsMargins()
        width = QFontMetrics(upright).horizontalAdvance(self.least or self.forms[-1])
        return QSize(width + margins.left() + margins.right(), height)

    def sizeHint(self) -> QSize:
        return QSize(self.room(self.form), super().sizeHint().height())

    def drawn_text(self) -> str:
        """What the field draws: the form the status bar chose, elided only where even that does not fit."""
        if self.form == DROPPED:
            return ""
        form, room = self.forms[min(self.form, len(self.forms) - 1)], self.contentsRect().width()
        # elidedText measures fractional widths: it cut "289.96 KiB" in the 65 px its rounded width asked
        if self.fontMetrics().horizontalAdvance(form) <= room:
            return form
        return self.fontMetrics().elidedText(form, Qt.TextElideMode.ElideRight, room)

    def paintEvent(self, event) -> None:
        drawn = self.drawn_text()
        if drawn == self.text():
            super().paintEvent(event)
            return
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment()), drawn)


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
        self.fields: dict[str, Field] = {}
        self._box: tuple[int, int, int] | None = None    # (left, right, gap) of the fields' box, once laid out
        self._under_way = ""                 # the notice of work under way shown, until the model is next idle
        self._busy_since_notice = False      # it is the model's work once the model was busy after it was shown
        self._busy = False
        self.error_line = ErrorLine(self)
        self.addWidget(self.error_line, 1)
        self.error_line.changed.connect(self._on_error_changed)
        self.messageChanged.connect(lambda _text: self._fit())
        for name in self.FIELDS:
            label = Field(KEPT.get(name))
            label.setObjectName(f"status_{name}")
            label.setContentsMargins(6, 0, 6, 0)
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
            label.forget_widths()
        self.error_line.clear()
        if info is None:
            self._set(model="no model", params="", attention="", device="", step="", ms="", memory="")
            return
        self._set(model=info.name, params=f"{human_count(info.n_params)} params", attention=attention_label(info),
                  device=f"{device or info.device} · {dtype or info.dtype}")
        self.fields["model"].setToolTip(f"{info.name}: {info.family}, {human_count(info.n_params)} parameters, "
                                        f"{info.n_layers} layers, d_model {info.d_model}, "
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
        self._fit()

    def _fields_room(self) -> int:
        """The width the fields may take: the box QStatusBar lays them out in, less the room a notice or the error
        line on its left takes. At 796 px the fields had left both 0 px wide, "Saved head.png" and "Cannot write
        head.png" unseen."""
        left, right, gap = self._box or self._estimated_box()
        if self.error_line.message:
            return right - left - NOTICE_ROOM_PX - gap
        if self.currentMessage():        # drawn from MESSAGE_LEFT_PX, ended MESSAGE_END_PX left of the first field
            needed = MESSAGE_LEFT_PX + self.fontMetrics().horizontalAdvance(self.currentMessage()) + MESSAGE_END_PX
            return right - min(NOTICE_ROOM_PX, needed)
        return right - left

    def _estimated_box(self) -> tuple[int, int, int]:
        """(left, right, gap) of the box the fields are laid out in, guessed from the bar's width and its size grip
        before QStatusBar has laid them out (_measure_box reads it after)."""
        grip = self.findChild(QSizeGrip)
        grip_px = grip.width() + GAP_PX + 1 if grip is not None and grip.isVisible() else 0
        return BOX_LEAD_PX, self.width() - grip_px, GAP_PX

    def _measure_box(self) -> None:
        """Read the fields' box from where QStatusBar laid them, as it did it (after a resize or a layout
        request): its right end is the right edge of the rightmost field shown (the stretch on their left takes
        the slack), the gap the one between two fields shown side by side, its left end the error line's left
        where it was shown. Read from the widgets, not QStatusBar's private layout: walking that from Python met
        a QSpacerItem where a layout had been (a wrapper of a deleted item) and raised in the event loop. The
        estimate from the grip and Qt's spacings (_estimated_box) shrank the fields 5 px early."""
        shown = sorted((field.geometry() for field in self.fields.values() if field.isVisible()), key=QRect.left)
        if not self.isVisible() or not shown:
            return
        left, _right, gap = self._box or self._estimated_box()
        gaps = [after.left() - before.right() - 1 for before, after in zip(shown, shown[1:])]
        gap = min((px for px in gaps if px >= 0), default=gap)
        if self.error_line.isVisible():
            left = self.error_line.x()
        box = (left, max(rect.right() + 1 for rect in shown), gap)
        if box != self._box:
            self._box = box
            self._fit()

    def _fit(self) -> None:
        """Each field's form: the whole texts where they fit, else the moves of SHRINK_ORDER, one at a time, until
        the fields fit their room. The window's least width and its size stay what they are."""
        forms = dict.fromkeys(self.FIELDS, 0)
        rooms = {name: [field.room(form) for form in range(len(field.forms))] for name, field in self.fields.items()}
        room = self._fields_room()
        gap = (self._box or self._estimated_box())[2]

        def width() -> int:
            shown = [rooms[name][min(form, len(rooms[name]) - 1)] for name, form in forms.items() if form != DROPPED]
            shown = [px for px in shown if px]
            return sum(shown) + gap * max(len(shown) - 1, 0)

        for name, form in SHRINK_ORDER:
            if width() <= room:
                break
            forms[name] = form
        for name, form in forms.items():
            self.fields[name].draw_form(form)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)                  # QStatusBar's layout has placed the fields for the new width
        self._measure_box()
        self._fit()

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip and self._on_tooltip(event):
            return True
        handled = super().event(event)
        if event.type() == QEvent.Type.LayoutRequest:     # the layout has placed the fields again
            self._measure_box()
        return handled

    def message_rect(self) -> QRect:
        """Where the notice is drawn: from MESSAGE_LEFT_PX to MESSAGE_END_PX short of the first permanent widget
        shown (or of the size grip), as QStatusBar draws it (QStatusBarPrivate::messageRect)."""
        grip = self.findChild(QSizeGrip)
        right = grip.x() if grip is not None and grip.isVisible() else self.width() - MESSAGE_RIGHT_PX
        right = min([right, *(child.x() - MESSAGE_END_PX for child in self._widgets_shown()
                              if child is not self.error_line)])
        return QRect(MESSAGE_LEFT_PX, 0, right - MESSAGE_LEFT_PX, self.height())

    def _widgets_shown(self) -> list[QWidget]:
        """The bar's own widgets shown (QStatusBar hides the others under a notice), the size grip aside."""
        children = self.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly)
        return [child for child in children if child.isVisible() and not isinstance(child, QSizeGrip)]

    def shown_message(self) -> str:
        """The notice as drawn: whole where it fits its room, else elided with "…" (the whole in the tooltip).
        QStatusBar cut it at the first field, mid-word: "…text ends here. Back, or click another c" beside the
        translator's fields at 1366 px (issue 22)."""
        whole, room, metrics = self.currentMessage(), self.message_rect().width(), self.fontMetrics()
        # elidedText measures fractional widths: a text as wide as its rounded room would lose its end
        if metrics.horizontalAdvance(whole) <= room:
            return whole
        return metrics.elidedText(whole, Qt.TextElideMode.ElideRight, max(room, 0))

    def paintEvent(self, event) -> None:
        """What QStatusBar.paintEvent draws (the panel, each shown widget's frame, the notice), the notice
        elided to its room (shown_message)."""
        painter = QPainter(self)
        option = QStyleOption()
        option.initFrom(self)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelStatusBar, option, painter, self)
        for child in self._widgets_shown():
            frame = QStyleOption()
            frame.rect, frame.palette = child.geometry().adjusted(-2, -1, 2, 1), self.palette()
            frame.state = QStyle.StateFlag.State_None
            self.style().drawPrimitive(QStyle.PrimitiveElement.PE_FrameStatusBarItem, frame, painter, child)
        if self.currentMessage():
            painter.setPen(self.palette().windowText().color())
            flags = Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextSingleLine
            painter.drawText(self.message_rect(), int(flags), self.shown_message())

    def _on_tooltip(self, event) -> bool:
        """The whole notice as the tooltip over it, where it is elided."""
        whole = self.currentMessage()
        if whole and self.message_rect().contains(event.pos()) and self.shown_message() != whole:
            QToolTip.showText(event.globalPos(), whole, self, self.message_rect())
            return True
        return False

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
        self._fit()                      # the italics are wider
        if busy:
            self._busy_since_notice = True
        elif self._under_way and self._busy_since_notice:
            if self.currentMessage() == self._under_way:
                self.clearMessage()
            self._under_way = ""

    def _set(self, **texts: str) -> None:
        for name, text in texts.items():
            self.fields[name].show_text(text, FORMS[name](text))
        self._fit()

