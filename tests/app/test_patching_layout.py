"""The Activation patching tab in the real window at its launch layout on 1366x768 and 1920x1080 screens: every
field shows its default text whole, the caption of a cancelled map shows every word, and the map stays legible.

Seen on a bare X screen at 1366x768 (drive 14, findings 4 and 5): the controls column was about 280 px wide
beside a wide empty map, the target and against fields about 28 px wide showing "aris" and "ome", the clean and
corrupted prompts cut at their start; after a Cancel the caption ended "... Cancelled: the blank cells were"
with empty room below it.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLineEdit, QStyle, QStyleOptionFrame

from explorer.app.window.learn_placement import open_learn
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import plot_boxes
from tests.app.screen_fit import MIN_PLOT_PX, SCREENS

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder

# Prompts of equal length in the bundled model's tokens, and answers of one token each (a map it can run).
CLEAN, CORRUPT, TARGET, AGAINST = "To be, or not to be, that is", "To go, or not to go, that is", " king", " queen"


def text_room(field: QLineEdit) -> int:
    """The pixels a line edit has for its text: the style's contents rectangle less the 2 px margin QLineEdit
    keeps each side of its text."""
    option = QStyleOptionFrame()
    field.initStyleOption(option)
    contents = field.style().subElementRect(QStyle.SubElement.SE_LineEditContents, option, field)
    margins = field.textMargins()
    return contents.width() - margins.left() - margins.right() - 4


def unseen_height(caption) -> int:
    """How many pixel rows of the caption's text, wrapped at its width in the font it is drawn in, lie outside the
    part of the caption a person can see (0: every word in sight)."""
    pad_x, pad_y = caption.PADDING
    metrics = QFontMetrics(caption.document.defaultFont())
    plain = caption.document.toPlainText()
    needed = metrics.boundingRect(QRect(0, 0, caption.width() - 2 * pad_x, 10**6), Qt.TextFlag.TextWordWrap,
                                  plain).height()
    seen = caption.visibleRegion().boundingRect()
    return max(0, pad_y + needed - (seen.bottom() + 1)) + max(0, seen.top() - pad_y)


def cancelled_after_one_pass(executor):
    """The model thread's executor, its work told it is cancelled from its second question on: the map stops
    after its first pass (layer 0), as a person's Cancel does, with no race against a fast model."""
    def execute(work) -> None:
        asked = []

        def answer(loaded, cancelled):
            def cancelled_later() -> bool:
                asked.append(True)
                return len(asked) > 1 or cancelled()
            work(loaded, cancelled_later)
        executor(answer)
    return execute


@contextmanager
def patching_tab(qtbot, tmp_path, monkeypatch, screen: str, learn: bool):
    """The real window at its launch layout on `screen` with the bundled model open, Learn open beside the panels
    as on a first start (or not, as on a later one), and the Activation patching tab raised."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREENS[screen]) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        if learn:
            journey.act("Learn opened, as on a first start", lambda: open_learn(journey.window))
        panel = journey.raise_panel("experiments")
        journey.act("the patching tab", lambda: panel.tabs.setCurrentWidget(panel.patching))
        yield journey, panel.patching


LAUNCHES = pytest.mark.parametrize("screen, learn", [(screen, learn) for screen in SCREENS for learn in (True, False)],
                                   ids=[f"{screen}-{'learn' if learn else 'no-learn'}" for screen in SCREENS
                                        for learn in (True, False)])


@LAUNCHES
def test_every_patching_field_shows_its_default_text_whole(qtbot, tmp_path, monkeypatch, screen, learn):
    with patching_tab(qtbot, tmp_path, monkeypatch, screen, learn) as (journey, view):
        fields = {"clean": view.clean, "corrupted": view.corrupt, "target": view.target, "against": view.against}
        cut = {name: (text_room(field), field.fontMetrics().horizontalAdvance(field.text()), field.text())
               for name, field in fields.items()
               if text_room(field) < field.fontMetrics().horizontalAdvance(field.text())}
        assert not cut, f"fields cut their default text (room px, text px, text): {cut}"


@LAUNCHES
def test_a_cancelled_maps_caption_shows_every_word_beside_a_legible_map(qtbot, tmp_path, monkeypatch, screen, learn):
    with patching_tab(qtbot, tmp_path, monkeypatch, screen, learn) as (journey, view):
        window_size = journey.window.size()
        for field, text in ((view.clean, CLEAN), (view.corrupt, CORRUPT), (view.target, TARGET),
                            (view.against, AGAINST)):
            field.setText(text)
        view.panel.executor = cancelled_after_one_pass(journey.window.session.requests.model_job_requested.emit)
        journey.act("patching map cancelled after its first pass", view.run_button.click)
        values = view.result.values
        assert not view.result.complete and np.isfinite(values).any() and np.isnan(values).any(), values
        caption = view.caption
        assert "Cancelled" in caption.document.toPlainText()
        assert caption.isVisible() and unseen_height(caption) == 0, \
            f"the caption {caption.width()}x{caption.height()} (seen {caption.visibleRegion().boundingRect()}) " \
            f"cuts its text: {caption.document.toPlainText()!r}"
        assert journey.window.size() == window_size, "the caption changed the window's size"
        maps = [box for box in plot_boxes(journey.window) if box["dock"] == "experiments"]
        assert len(maps) == 1 and min(maps[0]["width"], maps[0]["height"]) >= MIN_PLOT_PX, maps
