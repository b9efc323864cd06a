"""A panel's drawing in parts: a long drawing, and the plots a panel builds when first needed, run a part a turn
of the event loop when the panel comes into sight, so that no turn holds the window (a first raise at 8,000
tokens froze it 76-161 ms), or at once otherwise.

`DrawsInParts` is mixed into Panel (explorer/app/panels/base.py), whose is_shown, refresh, show_state,
settle_views, updating, raising, show_selection and session it uses.
"""
from __future__ import annotations

from collections.abc import Iterator

from explorer.app.widgets.turns import Turns
from explorer.drawing.heatmap_axes import label_widths, unmeasured

LONG_ROWS = 2048            # rows from which a panel's first drawing on a raise runs in parts, one per turn
LABELS_A_TURN = 2000       # row labels measured (or rows stacked) in one turn of such a drawing (~10 ms)


def measuring(labels) -> Iterator[None]:
    """Measure the widths of `labels` LABELS_A_TURN a turn (a part of draw_in_parts), yielding before each
    share not measured yet: the axes then lay out the labels from the cache."""
    for start in range(0, len(labels), LABELS_A_TURN):
        share = labels[start: start + LABELS_A_TURN]
        if unmeasured(share):
            yield
            label_widths(share)


class DrawsInParts:
    """Panel's drawing in parts (draw_in_parts) and its plots built in parts or at once (make_plots, plots_now)."""

    def _init_parts(self) -> None:
        self._turns = Turns(self, before=self._part_may_run, each=self.updating)    # a drawing's parts, a turn each
        self._turns.finished.connect(self._drawn_in_parts)
        self._making: Iterator | None = None      # the plots' building in turns (make_plots)

    @property
    def drawing(self) -> bool:
        """Parts of a drawing are still to run (draw_in_parts)."""
        return self._turns.running

    def draw_in_parts(self, parts: Iterator, in_turns: bool) -> None:
        """Run the generator `parts`: whole now, or (`in_turns`) up to its first yield now and each further part
        in a later turn of the event loop, the panel saying it is drawing meanwhile, so that a long drawing
        never holds the window. Another drawing, a refresh while hidden, and drop_work (another model or run)
        drop the parts still waiting: nothing of an older trace or selection is drawn after them."""
        self._stop_parts()
        if not in_turns:
            for _ in parts:
                pass
            return
        self._turns.start(parts, now=True)
        self.show_state()

    def _part_may_run(self) -> bool:
        if self.is_shown():
            return True
        self.refresh()                         # hidden meanwhile: drawn again, from the start, once shown
        return False

    def _drawn_in_parts(self) -> None:
        self.show_state()
        self.settle_views()

    def _stop_parts(self) -> None:
        if self._turns.stop():
            self.show_state()

    # ----- plots made in parts or at once ---------------------------------------------------------
    def plots_built(self) -> bool:
        """Whether the panel's plots, built when first needed (build_plots), are all built."""
        return True

    def build_plots(self) -> Iterator[None]:
        """Build the plots not built yet, yielding after each: each is 20-40 ms of pyqtgraph's making, which a
        raise's own turn at 8,000 tokens could not also hold."""
        return iter(())

    def make_plots(self) -> None:
        """The plots not built yet: raising, one a turn after the raise's own turn, which lays out and paints the
        panel's controls and words; else at once."""
        if not self.plots_built():
            self._making = self._plots_in_turns()
            self.draw_in_parts(self._making, in_turns=self.raising)

    def plots_now(self) -> None:
        """The plots not built yet, built now (an answer came before their turns did), in place of their building
        in turns (whose last part would show the selection again) but within any other drawing under way."""
        if self.plots_built():
            return
        if self._turns.runs(self._making):
            self._stop_parts()
        for _ in self.build_plots():
            pass

    def _plots_in_turns(self) -> Iterator[None]:
        yield
        yield from self.build_plots()
        if self.drawing:             # in turns: the refresh that raised the panel showed the selection before them
            self.show_selection(self.session.selection)
