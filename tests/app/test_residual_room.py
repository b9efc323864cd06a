"""residual_room.arrange over every body size: the plot is shown exactly where a plot of its least size fits, and
what it gives the table leaves the plot at least that size and the table at least its least (issue 22)."""
from __future__ import annotations

import itertools

from explorer.app.panels.residual_room import Needs, arrange

# SmolLM2's 30 layers in the real window's font (measured at 1920x1080): plot 295x162, table across 149 px tall
SMOLLM2 = Needs(plot=(295, 162), across_h=149, across_w=1422, down_w=310, down_least_w=302, down_h=501,
                down_least_h=69, gap=2)
FOUR_LAYERS = Needs(plot=(295, 162), across_h=135, across_w=230, down_w=310, down_least_w=302, down_h=87,
                    down_least_h=69, gap=2)


def test_the_plot_shows_wherever_it_fits_and_leaves_the_table_its_least():
    for needs, width, height in itertools.product((SMOLLM2, FOUR_LAYERS), range(100, 2000, 37), range(60, 900, 23)):
        room = arrange(width, height, width >= 1.2 * height, needs)
        fits = width >= needs.plot[0] and height >= needs.plot[1]
        assert room.plot == fits, (needs, width, height, room)
        if not room.plot:
            assert room.table
            continue
        if room.table and room.beside:             # the plot's least width left beside the table
            assert width - room.width - needs.gap >= needs.plot[0], (width, height, room)
            assert room.width >= (needs.across_w if room.across else needs.down_least_w), (width, height, room)
        elif room.table:                           # the plot's least height left above it
            assert height - room.height - needs.gap >= needs.plot[1], (width, height, room)
            assert room.height >= (needs.across_h if room.across else needs.down_least_h), (width, height, room)


def test_at_1920x1080_beside_learn_the_table_goes_beside_the_plot():
    room = arrange(1029, 287, True, SMOLLM2)           # the body measured in the real window
    assert room.plot and room.table and room.beside and not room.across
    assert 1029 - room.width - 2 >= SMOLLM2.plot[0]
