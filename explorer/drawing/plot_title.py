"""A plot title that never widens its plot: cut to its room, on a second line (wrapped at its spaces) before
an ellipsis, its whole text in the tooltip. heatmap.Heatmap, the panels' plots and the figures put it in place of
pyqtgraph's own title, which asks for its whole text's width."""
from __future__ import annotations

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextOption

TITLE_SIZE = "large"         # a plot's title: a CSS keyword, a step above the text around it (14 px beside 12),
                             # which Qt resolves against the title's font, in points or in pixels
WRAPPED_LINES = 2           # a title too long for one line takes a second before it is cut


class FittingTitle(pg.LabelItem):
    """A plot title that never widens its plot: pyqtgraph's asks for its text's width, so a long title
    in a narrow dock pushed the map and its colour bar out past the right edge. This one is cut with an
    second line where it has less room (wrapped at its spaces), else cut with an ellipsis, its whole text in
    the tooltip."""

    def __init__(self, text: str = "", parent=None, **args) -> None:
        self._whole, self._fitting, self._colour = "", False, None
        self._fitted: tuple | None = None       # what the shown text was last fitted to (_fit_key)
        args.setdefault("size", TITLE_SIZE)          # relative to the font: it grows with the application's
        super().__init__(text, parent=parent, **args)

    def setText(self, text, **args) -> None:
        if not self._fitting:
            self._whole = str(text)
            self.setToolTip(self._whole)
            # The colour as the text is set (a figure's theme is the default colour only while it is built):
            # the text cut again later, on a resize, is drawn in it.
            self._colour = args.get("color") or self.opts.get("color") or pg.getConfigOption("foreground")
            self._fitted = None                 # the whole text is shown again: it must be cut anew
        super().setText(text, **args)
        self._fit()

    def updateMin(self) -> None:
        super().updateMin()
        self.setMinimumWidth(0)                              # the plot, not its title, sets the width
        self._sizeHint[Qt.SizeHint.MinimumSize] = (0, self._sizeHint[Qt.SizeHint.MinimumSize][1])

    def resizeEvent(self, event) -> None:
        # At exit, Qt may resize the title after its text item is deleted (a window left for the interpreter's
        # shutdown to tear down): there is nothing left to fit nor place then (LabelItem's own would raise).
        if not self._drawable():
            return
        self._fit()
        super().resizeEvent(event)

    def _drawable(self) -> bool:
        return shiboken6.isValid(self) and shiboken6.isValid(self.item)

    def _fit_key(self) -> tuple:
        """What the cut text depends on: the width, the whole text, its font, colour and style."""
        return self.width(), self._whole, self.item.font().key(), str(self._colour), repr(sorted(self.opts.items()))

    def _fit(self) -> None:
        """Show as much of the whole text as the label's width holds (LabelItem draws it, styled). Nothing is
        set again when none of what the cut depends on changed: a layout resizes a title many times at the
        same width (a panel's first raise resized its titles hundreds of times, each setting its rich text)."""
        if not self._drawable():
            return
        width, text = self.width(), self._whole
        if self._fitting or width <= 0 or not text:
            return
        key = self._fit_key()
        if key == self._fitted:
            return
        self._fitting, shown, asked = True, text, self.opts.get("color")
        try:
            self._wrap_at(None)
            super().setText(shown, color=self._colour)
            if self.item.boundingRect().width() > width and not self._wrap_at(width):
                self._wrap_at(None)
            while len(shown) > 1 and self.item.boundingRect().width() > width:
                shown = text[: max(1, int(len(shown) * width / self.item.boundingRect().width()) - 1)]
                super().setText(shown + "…", color=self._colour)
        finally:
            self.opts["color"] = asked                      # the colour asked for, as it was
            self.text, self._fitting = text, False          # `text` stays the whole title, as set
        self._fitted = self._fit_key()

    def _wrap_at(self, width: float | None) -> bool:
        """Wrap the title at its spaces, centred, within `width` (None: one line again); whether it then holds
        in WRAPPED_LINES lines with no word wider than `width`. A second line keeps a title's meaning that a cut
        lost ("every head, and each layer's FFN (colours s…", "L0.H0 on random toke…", drive21)."""
        document = self.item.document()
        option = QTextOption(document.defaultTextOption())
        option.setAlignment(Qt.AlignmentFlag.AlignHCenter if width else Qt.AlignmentFlag.AlignLeft)
        option.setWrapMode(QTextOption.WrapMode.WordWrap)
        document.setDefaultTextOption(option)
        self.item.setTextWidth(width if width else -1)
        if width:
            document.size()                                 # lays the text out at the width
            lines = sum(document.findBlockByNumber(i).layout().lineCount() for i in range(document.blockCount()))
            if lines > WRAPPED_LINES or document.idealWidth() > width:
                return False
        self.updateMin()
        return True
