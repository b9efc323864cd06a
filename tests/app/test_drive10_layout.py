"""What driving the whole app on bare X screens (drive 10) found where panels meet the first start's layout."""
from __future__ import annotations

from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window


def test_why_this_token_and_the_atlas_keep_legible_plots_beside_learn_at_1366(qtbot, tmp_path, monkeypatch):
    """On the first start Learn opens beside the panels; at 1366x768 the central docks are then taller than
    wide, and the attribution's token column and the atlas's list took equal shares of the stacked height:
    the plots were 46-108 px tall (Journey.act checks every visible plot is at least MIN_PLOT_PX each way)."""
    from explorer.app.panels.learn import open_learn

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        open_learn(journey.window)
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question")
        for name in ("attribution", "atlas"):
            journey.act(f"raising {name}", lambda name=name: journey.raise_panel(name))
        docks = journey.window.docks
        assert docks["attribution"].widget().result is not None and docks["atlas"].widget().values is not None


def test_the_residual_streams_plot_keeps_its_room_beside_a_few_layers_rows_at_1366(qtbot, tmp_path, monkeypatch):
    """The bundled MLA model has 4 layers; with Learn open at 1366x768 the residual panel lists layers down a
    tall dock, and its stretched rows took three quarters of the height: the norms' plot was 72 px tall."""
    from explorer.app.panels.learn import open_learn

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        open_learn(journey.window)
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be")
        journey.act("raising the residual stream", lambda: journey.raise_panel("residual"))
        panel = journey.window.docks["residual"].widget()
        assert panel.stream is not None and not panel.layers_across
        assert panel.plot_view.isVisible(), "the norms' plot is hidden although the panel has room for it"
