"""adaptive.square_placement's `readable` least and adaptive.readable_px, checked against geometry.

A placement is laid out here by hand, as a splitter would lay it (the plots' part, a handle, the text's part; the
square plot's view and axes inside the plots' part, the second plot's beside or under it), and each rectangle is
checked to fit the room: the text at least the px asked for, every view at least LEAST each way. readable_px is
checked by a QTextEdit given that width, whose viewport must hold the characters of its own font (QFontMetrics).
"""
from __future__ import annotations

import pytest
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QTextEdit

from explorer.app.widgets.adaptive import Placement, readable_px, square_placement

HANDLES = (6, 6)
AXES = ((120, 130), (60, 95))         # the square plot's and the second plot's axes, px across and down
LEAST = 126
NARROW = 90
SHARE = 6 / 11
READABLE = 300


def laid_out(placed: Placement, room: tuple[int, int], axes=AXES) -> dict[str, tuple[int, int]]:
    """The (width, height) px of the text, the square plot's view and (where shown) the second plot's view, with the
    plots' part `placed.part` px along the outer way and the square plot's `placed.first` px along the inner way."""
    width, height = room
    handle, inner_handle = HANDLES
    (square_w, square_h), (other_w, other_h) = axes
    if placed.outer == "beside":
        text = (width - handle - placed.part, height)
        plots = (placed.part, height)
    else:
        text = (width, height - handle - placed.part)
        plots = (width, placed.part)
    if placed.inner == "alone":
        return {"text": text, "square": (plots[0] - square_w, plots[1] - square_h)}
    if placed.inner == "beside":
        square = (placed.first - square_w, plots[1] - square_h)
        other = (plots[0] - inner_handle - placed.first - other_w, plots[1] - other_h)
    else:
        square = (plots[0] - square_w, placed.first - square_h)
        other = (plots[0] - other_w, plots[1] - inner_handle - placed.first - other_h)
    return {"text": text, "square": square, "other": other}


def text_along(placed: Placement, parts: dict) -> int:
    """The text's px along the outer way (its width beside the plots, its height under them)."""
    return parts["text"][0 if placed.outer == "beside" else 1]


def assert_fits(placed: Placement, room: tuple[int, int], text_least: int, axes=AXES) -> None:
    parts = laid_out(placed, room, axes)
    assert text_along(placed, parts) >= text_least, (room, placed, parts)
    assert min(parts["square"]) >= placed.side >= LEAST, (room, placed, parts)
    if "other" in parts:
        assert min(parts["other"]) >= LEAST, (room, placed, parts)


@pytest.mark.parametrize("room", [(1030, 900), (1000, 1000), (1400, 520), (760, 900)])
def test_a_readable_least_keeps_the_text_that_wide_where_the_room_has_the_square(room):
    placed = square_placement(room, HANDLES, AXES, LEAST, NARROW, SHARE, readable=READABLE)
    assert placed is not None and placed.text == READABLE
    assert_fits(placed, room, READABLE)


def test_without_it_the_same_room_leaves_the_text_narrower():
    """The parameter matters: at the tall dock of drive 19 the square took the room and left the text a column."""
    room = (1030, 900)
    narrow = square_placement(room, HANDLES, AXES, LEAST, NARROW, SHARE)
    assert text_along(narrow, laid_out(narrow, room)) < READABLE


@pytest.mark.parametrize("room", [(450, 300), (500, 360)])
def test_where_a_readable_text_leaves_no_square_the_text_narrows_and_the_square_stays(room):
    """450 x 300: beside, 450 - 6 - 300 px leave less than the square's axes and LEAST; stacked, less than none."""
    placed = square_placement(room, HANDLES, AXES, LEAST, NARROW, SHARE, readable=READABLE)
    assert placed is not None and placed.text == NARROW
    assert placed == square_placement(room, HANDLES, AXES, LEAST, NARROW, SHARE)
    assert_fits(placed, room, NARROW)


ROOMS = [(width, height) for width in range(400, 1601, 40) for height in range(300, 1101, 40)]


def both_plots_fit(room: tuple[int, int], text_least: int, axes=AXES) -> bool:
    """Whether some layout holds the text's `text_least` and both plots' views of LEAST each way: the plots beside
    the text or over it, the two plots side by side or one over the other."""
    (square_w, square_h), (other_w, other_h) = axes
    handle, inner_handle = HANDLES
    for width, height, axes_along, axes_across in ((*room, (square_w, other_w), (square_h, other_h)),
                                                   (*room[::-1], (square_h, other_h), (square_w, other_w))):
        plots_along = width - handle - text_least
        in_a_row = plots_along >= sum(axes_along) + 2 * LEAST + inner_handle and height >= max(axes_across) + LEAST
        in_a_column = plots_along >= max(axes_along) + LEAST and height >= sum(axes_across) + 2 * LEAST + inner_handle
        if in_a_row or in_a_column:
            return True
    return False


def test_the_second_plot_stays_where_a_narrow_text_showed_it_and_a_readable_one_leaves_it_room():
    kept = 0
    for room in ROOMS:
        narrow = square_placement(room, HANDLES, AXES, LEAST, NARROW, SHARE)
        placed = square_placement(room, HANDLES, AXES, LEAST, NARROW, SHARE, readable=READABLE)
        if placed is None:
            assert narrow is None, room
            continue
        assert_fits(placed, room, placed.text)
        if narrow is not None and narrow.inner != "alone" and placed.text == READABLE and both_plots_fit(
                room, READABLE):
            assert placed.inner != "alone", (room, placed, narrow)
            kept += square_placement(room, HANDLES, AXES, LEAST, READABLE, SHARE).inner == "alone"
    assert kept > 0, "no room where the readable least alone would have dropped the second plot"


# Show the work's as measured at 1366 x 768: the q·k bars' title and axis take more height than the map's top labels
TALL_SECOND = ((73, 72), (55, 88))


@pytest.mark.parametrize("keep_second", [False, True])
def test_a_second_plot_with_taller_axes_than_the_square_keeps_its_least_view(keep_second):
    """The map over the text with the bars beside it (530 x 409 px, the window's least width at 1366 x 768): the
    plots' part was cut to the room over a readable text, 201 px, and the bars' view was 201 - 88 = 113 px tall,
    under the least the placement had promised (a 271 x 115 px chart in the real window)."""
    for room in ROOMS + [(530, 409)]:
        placed = square_placement(room, HANDLES, TALL_SECOND, LEAST, NARROW, SHARE, READABLE, keep_second)
        if placed is not None:
            assert_fits(placed, room, placed.text, TALL_SECOND)


@pytest.mark.parametrize("axes", [AXES, TALL_SECOND])
def test_keep_second_shows_the_second_plot_wherever_the_room_has_it_beside_a_readable_text(axes):
    """Show the work's q·k bars came and went with a few px of a model's key labels: SmolLM2's map, its top axis
    102 px, kept 273 px with the bars against 369 px alone, under KEEP_SECOND, and the bars were given up, where
    Gemma's 76 px axis kept them (1366 x 768, Learn beside the panels). With keep_second they stay wherever they
    fit."""
    kept = 0
    for room in ROOMS + [(614, 471)]:
        placed = square_placement(room, HANDLES, axes, LEAST, NARROW, SHARE, READABLE, keep_second=True)
        if placed is None:
            continue
        assert_fits(placed, room, placed.text, axes)
        if placed.text == READABLE and both_plots_fit(room, READABLE, axes):
            assert placed.inner != "alone", (room, placed)
            kept += square_placement(room, HANDLES, axes, LEAST, NARROW, SHARE, READABLE).inner == "alone"
    assert kept > 0, "no room where the placement without keep_second gave the second plot up"


@pytest.mark.parametrize("point_size", [9, 16])
def test_readable_px_holds_that_many_characters_of_the_texts_own_font(qtbot, point_size):
    text = QTextEdit()
    qtbot.addWidget(text)
    font = QFont(text.font())
    font.setPointSize(point_size)
    text.setFont(font)
    text.setPlainText("\n".join(["a line of the derivation"] * 200))      # a scroll bar takes its share
    text.resize(readable_px(text, 30), 200)
    text.show()
    qtbot.waitExposed(text)
    assert text.verticalScrollBar().isVisible()
    lines = text.viewport().width() - 2 * text.document().documentMargin()     # the text's own margins inside it
    assert lines >= 30 * QFontMetrics(font).averageCharWidth()
