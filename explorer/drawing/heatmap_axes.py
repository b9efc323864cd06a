"""The axes of a heat map: token tick labels that never overlap nor drop an end (which ones show:
label_thinning), written upright on a key axis, each label measured once per font for every axis
(heatmap.Heatmap puts them together with its title, plot_title.FittingTitle)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QFont, QFontInfo, QFontMetricsF, QGuiApplication, QTextCursor
from PySide6.QtWidgets import QGraphicsTextItem

from explorer.drawing.label_thinning import kept_apart, thinned_ticks

MAX_UPRIGHT_PX = 90          # the tallest a top or bottom axis of upright token labels grows (default font)
BASE_LINE_PX = 14.0          # the default font's line height, which the sizes above are for
SHORT_LABEL = 3              # characters a label may have and still be written across (numbers, "H5")
TICK_PX = 3                  # a tick's length, out of the map
LABEL_GAP_PX = 3.0           # between two labels' lines along an axis: a blank pixel between the tallest inks


class TokenAxis(pg.AxisItem):
    """An axis whose ticks are labels at given positions, thinned so that they never overlap.

    A top or bottom axis writes its labels upright (rotated 90°), as matrix plots do: a label then
    takes one line height of the axis, as on the left axis, so the key axis labels as many tokens
    as the query axis instead of the few whose full width fits side by side."""

    def __init__(self, orientation: str, **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self._labels: list[str] = []
        self._positions = np.zeros(0)
        self._lookup: dict[float, int] = {}
        self._longest = 1
        self._measured_font = ""                    # the font of _widest
        self._widest: tuple[int, float] | None = None   # (n, the widest of the first n labels), in _measured_font
        # Ticks point out of the map: drawn into it (pyqtgraph's negative length) they covered its first
        # 3 px at every label, and a long map's first blocks there (the first keys' column, an attention sink).
        self.setStyle(tickLength=TICK_PX, autoExpandTextSpace=True)
        self.enableAutoSIPrefix(False)
        # The application's font, not an override of changeEvent: Qt calls a QGraphicsWidget's changeEvent
        # while tearing the scene down too, and a Python override reached then ends the process (SIGSEGV).
        app = QGuiApplication.instance()
        if app is not None:
            app.fontChanged.connect(self._on_application_font)

    def set_labels(self, labels: Sequence[str], positions: Sequence[float] | None = None) -> None:
        """Ticks at `positions` (default 0, 1, 2, ...); the same labels again change nothing, so a decoding
        step does not make pyqtgraph lay out and draw an unchanged axis again. Labels that only add to the
        old ones (a decoding step's new token) are looked up and measured alone: at 8,000 tokens going
        over every label again took a third of a step's redraw."""
        given = labels if isinstance(labels, list) else list(labels)
        positions = np.arange(len(given), dtype=float) if positions is None else np.asarray(positions, float)
        old = len(self._labels)
        kept = (old <= len(given) and given[:old] == self._labels
                and np.array_equal(positions[:old], self._positions))      # (fast: the same str objects)
        if kept and old == len(given):
            return
        if kept and old:
            labels = self._labels + list(map(str, given[old:]))
        else:
            labels = list(map(str, given))
            if labels == self._labels and np.array_equal(positions, self._positions):
                return
            old, self._lookup, self._widest = 0, {}, None
        longest = max((len(label) for label in labels[old:]), default=1)
        self._longest = max(self._longest, longest) if old else longest
        self._labels, self._positions = labels, positions
        # position -> label index, read at every tick layout
        self._lookup.update({float(p): i for i, p in enumerate(positions[old:].tolist(), old)})
        if self.orientation in ("left", "right") and self._labels:
            self._fit_width()
        elif self.upright:
            self._fit_upright()
        self.picture = None
        self.update()

    def setRange(self, mn: float, mx: float) -> None:
        """pyqtgraph lays the axis out and draws it again on every range it is given; the view gives
        the same range again whenever anything in the plot changes (each decoding step)."""
        if [mn, mx] != list(getattr(self, "range", ())):
            super().setRange(mn, mx)

    def tickValues(self, minVal, maxVal, size):
        if not self._labels:
            return []
        return thinned_ticks(self._positions, minVal, maxVal, size, self._needed_px())

    def tickStrings(self, values, scale, spacing):
        strings = [self._labels[self._lookup[float(v)]] if float(v) in self._lookup else "" for v in values]
        if self.orientation not in ("left", "right"):
            return strings
        # Cut where a label is wider than the room beside the title: the text of "2000 ␣<0xE2><0…" ran
        # under the axis title "query" (the axis is at most 130 px wide).
        metrics, room = QFontMetricsF(self._font()), self._label_room()
        return [metrics.elidedText(text, Qt.TextElideMode.ElideRight, room)
                if metrics.horizontalAdvance(text) > room else text for text in strings]

    def _label_room(self) -> float:
        """Pixels a side axis's label may take: its width less the title's and the gap at the ticks."""
        return max(8.0, self.width() - self._title_px() - 8.0 * self._line_px() / BASE_LINE_PX)

    @property
    def upright(self) -> bool:
        """Labels written upright: those of a top or bottom axis longer than a short number or "H12"."""
        return self.orientation in ("top", "bottom") and getattr(self, "_longest", 0) > SHORT_LABEL

    def _fit_upright(self) -> None:
        """Make a top or bottom axis tall enough for its upright labels, as measured, and its title (e.g. "key"):
        guessed from a mean character's width, "<0xE6><0x…" (87 px) was given 71 px."""
        self.setStyle(autoExpandTextSpace=False)
        grow = self._line_px() / BASE_LINE_PX                  # a larger font (an export) takes more room
        labels = min(MAX_UPRIGHT_PX * grow, self._widest_label() + 12 * grow)
        self.setHeight(int(labels) + TICK_PX + self._title_px())

    def _title_px(self) -> int:
        return int(round(20 * self._line_px() / BASE_LINE_PX)) if self.label.isVisible() else 0

    def _font(self) -> QFont:
        return self.style["tickFont"] or QFont()

    def _line_px(self) -> float:
        return QFontMetricsF(self._font()).height()

    def _char_px(self) -> float:
        """A label character's mean width (6.5 px in the default font)."""
        return QFontMetricsF(self._font()).averageCharWidth() + 0.5

    def set_font(self, font: QFont) -> None:
        """Labels in `font` (an export's, scaled to its size); the axis makes room for them."""
        self.setStyle(tickFont=font)
        self.showLabel(self.label.isVisible())

    def _fit_width(self) -> None:
        """Make a left or right axis wide enough for its labels and its title (e.g. "query") beside them."""
        grow = self._line_px() / BASE_LINE_PX
        self.setWidth(int(min(130 * grow, self._widest_label() + 16 * grow)) + self._title_px())

    def _widest_label(self) -> float:
        """The widest label in pixels, measured ("<0xE2>" is wider than its average characters); each label is
        measured once per font by every axis together (label_widths: the Q, K and V maps' row labels are the
        same 8,000 labels at a long prompt), and after labels were only added (set_labels keeps `_widest`
        then) only the new ones are looked at."""
        font = self._font()
        if font.key() != self._measured_font:
            self._measured_font, self._widest = font.key(), None
        start, widest = (0, 0.0) if self._widest is None else self._widest
        widest = max(widest, max(label_widths(self._labels[start:], font), default=0.0))
        self._widest = (len(self._labels), widest)
        return widest

    def showLabel(self, show: bool = True) -> None:
        super().showLabel(show)
        self._fit()

    def _fit(self) -> None:
        if self.upright:
            self._fit_upright()
        elif self.orientation in ("left", "right") and getattr(self, "_labels", None):   # (during __init__: none)
            self._fit_width()

    def _on_application_font(self, _font) -> None:
        """Fitted again when the application's font changes (View ▸ Presentation makes it 1.4 times larger):
        an axis in the default font measured its labels in the font it had when they were set, which cut
        the upright keys and left two-digit layer labels out. Once the change has reached the scene's items
        (it is posted to them), so the labels are measured in the new font."""
        if not shiboken6.isValid(self):         # deleted with its scene while the application lives on
            return
        if self.style["tickFont"] is None:
            QTimer.singleShot(0, self, self._refit)

    def _refit(self) -> None:
        self._fit()
        self.picture = None
        self.update()

    def _needed_px(self) -> float:
        """Room one label takes along the axis: a line of its font and a gap (upright or on a side axis), else its
        width. The ink of a label with an accented capital and a descender ("Ĵyg") is about a line tall: with a
        pixel between lines, two such upright labels touched."""
        if self.orientation in ("left", "right") or self.upright:
            return max(13.0, self._line_px() + LABEL_GAP_PX)
        return self._char_px() * self._longest + 8.0

    def generateDrawSpecs(self, p):
        """pyqtgraph's specs, with ticks that start a pixel off the map, and a label for every tick of an
        upright axis: pyqtgraph drops a label whose width, measured lying down, sticks out of the axis,
        which cut the first and last keys."""
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return specs
        axis_spec, tick_specs, text = specs
        tick_specs = self._off_the_map(tick_specs)
        if self.upright and self._labels:
            text = self._upright_text(tick_specs)
        return axis_spec, tick_specs, text

    def _off_the_map(self, tick_specs: list) -> list:
        """Each tick moved a pixel out, onto the axis line: starting on the map's edge, it covered the map's
        first pixel row or column there (a long map's first block, the first keys' column)."""
        step = {"left": QPointF(-1, 0), "right": QPointF(1, 0), "top": QPointF(0, -1), "bottom": QPointF(0, 1)}
        out = step[self.orientation]
        return [(pen, QPointF(start) + out, QPointF(stop) + out) for pen, start, stop in tick_specs]

    def _upright_text(self, tick_specs: list) -> list:
        """A text spec for every labelled tick of an upright axis, at the tick."""
        ticks = [spec[1].x() for spec in tick_specs]
        levels = self.tickValues(self.range[0], self.range[1], self.boundingRect().width())
        values = levels[0][1] if levels else []
        lo, hi = self.range[0], self.range[1]
        width = self.boundingRect().width()
        placed = []
        for value, label in zip(values, self.tickStrings(values, 1.0, 1.0)):
            x = (value - lo) * width / ((hi - lo) or 1.0)
            if ticks and min(ticks) - 0.5 <= x <= max(ticks) + 0.5:
                placed.append((self._drawn_x(x), label))
        kept = kept_apart(placed, self._needed_px() - 0.5)
        return [(QRectF(x - 7, 0, 14, 14), 0, label) for x, label in kept]   # the centre's x read

    def _drawn_x(self, x: float) -> float:
        """Where an upright label at `x` is drawn: kept inside the axis, the first key's label, centred on the
        map's left edge, lost its left half."""
        bounds, half = self.boundingRect(), self._half_line()
        return min(max(x, bounds.left() + half), bounds.right() - half)

    def _half_line(self) -> float:
        return max(7.0, self._line_px() / 2)         # an upright label's half height, across the axis

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs) -> None:
        """pyqtgraph's drawing, with a top or bottom axis's labels upright, reading bottom to top."""
        if not self.upright:
            super().drawPicture(p, axisSpec, tickSpecs, textSpecs)
            return
        super().drawPicture(p, axisSpec, tickSpecs, [])
        if self.style["tickFont"] is not None:
            p.setFont(self.style["tickFont"])
        p.setPen(self.textPen())
        bounds = self.boundingRect()
        room = bounds.height() - 6 - TICK_PX - self._title_px()
        half = self._half_line()
        metrics = QFontMetricsF(p.font())
        for rect, _flags, whole in textSpecs:
            # Longer than the axis's room, elided after a whole character: the box cut it mid-glyph ("<0xE6><0:").
            text = metrics.elidedText(whole, Qt.TextElideMode.ElideRight, room) \
                if metrics.horizontalAdvance(whole) > room else whole
            p.save()
            edge = bounds.bottom() - 4 - TICK_PX if self.orientation == "top" else bounds.top() + 4 + TICK_PX
            p.translate(rect.center().x(), edge)       # kept inside the axis (_upright_text, _drawn_x)
            p.rotate(-90)
            left = 0 if self.orientation == "top" else -room
            box = QRectF(left, -half, room, 2 * half)
            align = Qt.AlignmentFlag.AlignLeft if self.orientation == "top" else Qt.AlignmentFlag.AlignRight
            p.drawText(box, int(align | Qt.AlignmentFlag.AlignVCenter), text)
            p.restore()


_WIDTHS: dict[str, dict[str, float]] = {}      # font key -> label -> its width in pixels, for every axis
MOST_WIDTHS = 1 << 17                          # widths kept per font: a long document's labels, numbered and plain


def _widths_of(font: QFont) -> dict[str, float]:
    widths = _WIDTHS.setdefault(font.key(), {})
    if len(widths) > MOST_WIDTHS:
        widths.clear()
    return widths


def label_widths(labels: Sequence[str], font: QFont | None = None) -> list[float]:
    """Each label's width in `font` (the default font: an axis's unless it was given one), each label measured
    once per font for every axis (QFontMetricsF.horizontalAdvance: ~5 µs a label, 40 ms for 8,000)."""
    font = font or QFont()
    widths, metrics = _widths_of(font), None
    for label in labels:
        if label not in widths:
            metrics = metrics or QFontMetricsF(font)
            widths[label] = metrics.horizontalAdvance(label)
    return [widths[label] for label in labels]


def unmeasured(labels: Sequence[str], font: QFont | None = None) -> int:
    """How many of `labels` an axis in `font` would measure yet."""
    widths = _WIDTHS.get((font or QFont()).key(), {})
    return sum(label not in widths for label in labels)


def symmetric_levels(matrix: np.ndarray) -> tuple[float, float]:
    """Colour levels (-m, m) for signed values, m = max |x| over the finite entries (1 when there are none)."""
    finite = np.abs(matrix[np.isfinite(matrix)])
    top = float(finite.max()) if finite.size else 1.0
    return -top or -1.0, top or 1.0


def text_px(item: QGraphicsTextItem) -> int:
    """The pixel size a rich text item draws its text in (its first character's), whatever unit its size was
    given in: points, pixels, a CSS keyword, or none (the item's font, itself in points or in pixels)."""
    cursor = QTextCursor(item.document())
    cursor.movePosition(QTextCursor.MoveOperation.NextCharacter)
    return QFontInfo(cursor.charFormat().font()).pixelSize()


def scaled_px(font: QFont, scale: float) -> QFont:
    """`font` `scale` times larger, in pixels, whether it was sized in points or in pixels."""
    bigger = QFont(font)
    bigger.setPixelSize(max(1, round(QFontInfo(font).pixelSize() * scale)))
    return bigger
