"""A long map's thinned key labels keep apart at its ends too (drive21): the all-heads export at 128 tokens drew
the first key's label '␣tor' over the next one's, '␣inter'. The first label, centred on the map's left edge, is
drawn moved into the axis by half a line, which the thinning (a label every k keys, k from the line height) did
not count.

Expectation, in pixels: each label the axis draws is drawn alone (the others blanked) and its ink columns found
in the grabbed image (test_key_labels_apart.ink_columns); every two neighbours that draw ink leave a blank pixel
column between them, at map widths where 128 keys are thinned, and the first and last keys are labelled.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from explorer.drawing.colours import figure_colours
from explorer.drawing.heatmap import Heatmap
from tests.app.test_key_labels_apart import ink_columns, settled

WORDS = ["␣tor", "re", "nt", "s", ",", "␣ex", "cept", "␣at", "␣occasion", "al", "␣inter", "v", "als", ".", "␣It",
         "␣was"]
LABELS = [WORDS[i % len(WORDS)] for i in range(128)]


def test_thinned_key_labels_do_not_touch_at_the_maps_ends(qtbot, monkeypatch):
    with figure_colours("light"):
        view = pg.GraphicsLayoutWidget()
        view.setBackground("w")
        heatmap = Heatmap(view.ci, colorbar=False, axes=("left", "top"))
        qtbot.addWidget(view)
        heatmap.set_matrix(np.zeros((128, 128)), (0, 1), LABELS, LABELS)
        view.show()
        qtbot.waitExposed(view)
        axis = heatmap.axes["top"]
        for width in range(250, 330, 7):
            view.resize(width, width + 60)
            settled(qtbot, axis)
            levels = axis.tickValues(axis.range[0], axis.range[1], axis.boundingRect().width())
            values = levels[0][1]
            assert 2 < len(values) < 128, f"at {width} px the keys are not thinned"
            spans = [ink_columns(view, axis, i, monkeypatch) for i in range(len(values))]
            drawn = [(i, span) for i, span in enumerate(spans) if span.size]
            assert drawn[0][0] == 0 and values[0] == 0, f"at {width} px the first key has no label"
            for (i, a), (j, b) in zip(drawn, drawn[1:]):
                assert b.min() > a.max() + 1, f"at a {width} px map, labels of keys {values[i]:.0f} and " \
                    f"{values[j]:.0f} touch: columns {a.min()}-{a.max()}, {b.min()}-{b.max()}"
