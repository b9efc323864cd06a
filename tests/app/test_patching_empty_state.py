"""The Activation patching tab says why its map is empty (issue 22, a panel's contract: draw, or say why not).

Before: the map's place was a black box until a map was run. Expectation: with no map run, the part of the tab
beside (or under) the controls is not a black box (less than a tenth of its pixels near black, as text on a
light ground is) and a sentence a person can read there says to press Run map; once a map is drawn, that part
shows the map (its plot in sight) and the sentence is gone; another model clears the map and the sentence is back.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QLabel

from explorer.app.panels.experiments import ExperimentsPanel
from explorer.app.state.session import Session
from tests.app.layout_probe import in_sight
from tests.app.screen_fit import settle
from tests.app.synthetic_trace import build_trace

NEAR_BLACK = 40                  # grey level under which a pixel reads as black


def black_share(widget) -> float:
    """The share of `widget`'s rendered pixels that are near black."""
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_Grayscale8)
    width, height = image.width(), image.height()
    pixels = np.frombuffer(image.constBits(), np.uint8).reshape(height, image.bytesPerLine())[:, :width]
    return float((pixels < NEAR_BLACK).mean())


def sentences_in_sight(widget) -> list[str]:
    return [label.text() for label in widget.findChildren(QLabel) if in_sight(label) and label.text()]


def experiments_panel(qtbot, n_layers: int, n_heads: int) -> ExperimentsPanel:
    """The Experiments panel on its own, over a synthetic trace of that many layers and heads."""
    trace = build_trace(n_layers=n_layers, n_heads=n_heads)
    session = Session()
    session.set_model(trace.model)
    session.set_trace(trace)
    panel = ExperimentsPanel(session)
    qtbot.addWidget(panel)
    return panel


def test_the_patching_map_says_it_is_empty_until_a_map_is_run(qtbot):
    panel = experiments_panel(qtbot, 3, 4)
    panel.resize(1200, 420)
    panel.show()
    panel.tabs.setCurrentWidget(panel.patching)
    settle(0.3)
    view = panel.patching
    map_place = view.splitter.widget(1)
    share = black_share(map_place)
    assert share < 0.1, f"{share:.0%} of the map's empty place is black"
    said = [text for text in sentences_in_sight(map_place) if "Run map" in text]
    assert said, f"no sentence in the map's place says to press Run map: {sentences_in_sight(map_place)}"

    values = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, 1.5, 2.5, 3.5], [4.0, 3.0, 2.0, 1.0]])
    view._on_finished(SimpleNamespace(values=values, clean=4.0, corrupt=1.0, site="head", metric="logit_diff",
                                      complete=True))
    settle(0.3)
    assert in_sight(view.view), "the drawn map is out of sight"
    assert not [text for text in sentences_in_sight(map_place) if "Run map" in text], "the empty note stayed"

    view.forget(model_id=-1, unfit=None)                 # another model: its map is not this one's
    settle(0.3)
    assert not in_sight(view.view) and black_share(map_place) < 0.1
    assert [text for text in sentences_in_sight(map_place) if "Run map" in text]


def test_a_gap_of_nothing_is_not_shared_out(qtbot):
    """drive28: clean 1.724, corrupted 1.726 on the MLA model's default prompts drew "-266% of the gap" in
    saturated colours. With no gap to recover (the clean prompt not above the corrupted one, or a gap the
    patches move past twenty times over) the map is each patch's change, and the caption says why."""
    panel = experiments_panel(qtbot, 2, 2)
    view = panel.patching
    values = np.array([[1.732, 1.70], [1.726, 1.74]])
    for clean, words in ((1.724, "the clean prompt does not raise it above the corrupted one"),
                         (1.7265, "that gap is too small beside the patches' changes (up to 0.026)")):
        view._on_finished(SimpleNamespace(values=values, clean=clean, corrupt=1.726, site="head",
                                          metric="logit_diff", complete=True))
        said = view.caption.document.toPlainText()
        # the change the map shows strongest is named (L0.H1's -0.026), not the highest value (L1.H1's +0.014)
        assert words in said and "% of the gap" not in said, said
        assert "The largest change: L0.H1, -0.026 (to 1.700)." in said, said
        np.testing.assert_allclose(view.heatmap.image.image, values - 1.726, atol=1e-6)
    view._on_finished(SimpleNamespace(values=values, clean=2.726, corrupt=1.726, site="head", metric="logit_diff",
                                      complete=True))
    said = view.caption.document.toPlainText()
    assert "The largest: L1.H1 at 1.740 (1% of the gap)." in said, said
    np.testing.assert_allclose(view.heatmap.image.image, (values - 1.726) / 1.0, atol=1e-6)
