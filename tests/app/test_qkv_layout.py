"""The Q / K / V panel keeps every map legible beside Learn at 1366x768, and lays its matrices out for the width
its view has once shown, not the width it had when hidden.

Driving the app on Xvfb measured the bundled MLA model's five maps (Q, K, V, c_KV, k_R) at 178x85 px and the
translator's three at 201x109 px in the ~614 px dock beside the Learn column: two a row fit the width, but the rows
shared the dock's height. The projection weights, drawn on request, were 42 px wide (MLA's five) beside Learn and
66-79 px (GQA's three) at 1920x1080 without it, all in one row. Journey.act checks every visible plot's ViewBox is
at least MIN_PLOT_PX (120) each way and the window stays within the screen, after each action.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from explorer.app.window.learn_placement import open_learn
from tests.app.journey import BUNDLED, journey_in_a_window, walk_on_screen
from tests.app.screen_fit import MIN_PLOT_PX

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.mark.parametrize("model, prompt, n_maps", [("shakespeare-mla", "To be, or not to be, that is the question", 5),
                                                   ("translate-en-zh", "The cat sits on the mat.", 3)],
                         ids=["MLA", "translator"])
@pytest.mark.parametrize("learn", [True, False], ids=["beside Learn", "alone"])
@pytest.mark.parametrize("screen", [QSize(1366, 768), QSize(1920, 1080)], ids=["1366x768", "1920x1080"])
def test_every_q_k_v_map_is_legible(qtbot, tmp_path, monkeypatch, model, prompt, n_maps, learn, screen):

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        if learn:
            open_learn(journey.window)
        journey.open(BUNDLED / model, prompt)
        journey.act("raising Q / K / V", lambda: journey.raise_panel("qkv"))
        panel = journey.window.docks["qkv"].widget()
        assert len(panel.heatmaps) == n_maps
        for name, heatmap in panel.heatmaps.items():         # each map's own box, scrolled to or not
            box = heatmap.plot.getViewBox().sceneBoundingRect()
            assert min(box.width(), box.height()) >= MIN_PLOT_PX, f"{name} is {box.width()}x{box.height()} px"


@pytest.mark.parametrize("model, learn, screen", [("shakespeare-mla", True, QSize(1366, 768)),
                                                  ("shakespeare-gqa", False, QSize(1920, 1080))],
                         ids=["MLA beside Learn at 1366x768", "GQA alone at 1920x1080"])
def test_the_projection_weights_are_legible_too(qtbot, tmp_path, monkeypatch, model, learn, screen):

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, screen) as journey:
        if learn:
            open_learn(journey.window)
        journey.open(BUNDLED / model, "To be, or not to be, that is the question")
        panel = journey.raise_panel("qkv")
        journey.act("the projection weights", lambda: panel.weights_box.setChecked(True))
        qtbot.waitUntil(lambda: panel.weights is not None, timeout=30000)
        journey.act("the weights drawn", lambda: None)
        assert set(panel.weight_maps) == set(panel.weights.matrices)
        for name, heatmap in {**panel.heatmaps, **panel.weight_maps}.items():
            box = heatmap.plot.getViewBox().sceneBoundingRect()
            assert min(box.width(), box.height()) >= MIN_PLOT_PX, f"{name} is {box.width()}x{box.height()} px"


@pytest.fixture
def journey(qtbot, tmp_path, screen, dialogs):
    yield from walk_on_screen(qtbot, tmp_path, screen, dialogs)


def test_q_k_v_narrowed_while_its_views_were_hidden_lays_them_out_again(journey):
    """On a bare 1366x768 X screen, Help ▸ Learn's tour left Q_0, K_0 and V_0 three a row at 60-79 px each in a
    ~740 px dock (two a row fit there at MATRIX_PX each): the dock was narrowed while the panel's views were hidden
    behind its "working" note, so the panel's resize read the view's old, wider width, and nothing laid it out
    again when the views came back. Journey.act checks every visible plot against MIN_PLOT_PX after each action."""
    from explorer.app.widgets.map_grid import MATRIX_PX

    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question:")
    window = journey.window
    panel = journey.raise_panel("qkv")
    journey.act("Q / K / V raised", lambda: None)
    panel.body_widget.hide()                    # its views hidden, as behind a note while a model loads
    journey.act("Learn opened", lambda: open_learn(window))
    panel.body_widget.show()
    journey.act("the views back", lambda: None)
    fit = max(1, min(3, panel.view.width() // MATRIX_PX))
    per_row = panel.maps.per_row
    assert per_row == fit, f"{per_row} matrices a row in a {panel.view.width()} px view ({fit} fit)"
