"""The Q / K / V panel lays its matrices out for the width its view has once shown, not the width it had when
hidden.

On a bare 1366x768 X screen, Help ▸ Learn's tour left Q_0, K_0 and V_0 three a row at 60-79 px each in a ~740 px
dock (two a row fit there at MATRIX_PX each): the dock was narrowed while the panel's views were hidden behind
its "working" note, so the panel's resize read the view's old, wider width, and nothing laid it out again when the
views came back. Journey.act checks every visible plot against MIN_PLOT_PX after each action.
"""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the journey's tiny models are written with it)

from tests.app.journey import BUNDLED, walk_on_screen
from tests.app.test_window import dialogs, store_home  # noqa: F401


@pytest.fixture
def journey(qtbot, tmp_path, screen, dialogs):  # noqa: F811
    yield from walk_on_screen(qtbot, tmp_path, screen, dialogs)


def test_q_k_v_narrowed_while_its_views_were_hidden_lays_them_out_again(journey):
    from explorer.app.panels.learn import open_learn
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
