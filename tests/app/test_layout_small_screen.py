"""Panels keep legible plots and whole words on a 1366x768 screen, most of them beside Help ▸ Learn's column (the
first start's layout), and the window stays within the screen (Journey.act checks every visible plot is at least
MIN_PLOT_PX each way after each action)."""
from __future__ import annotations

from PySide6.QtCore import QSize

from explorer.app.panels.derivation import NO_BARS
from explorer.app.window.learn_placement import open_learn
from tests.app.journey import BUNDLED, journey_in_a_window


def test_why_this_token_and_the_atlas_keep_legible_plots_beside_learn_at_1366(qtbot, tmp_path, monkeypatch):
    """On the first start Learn opens beside the panels; at 1366x768 the central docks are then taller than
    wide, and the attribution's token column and the atlas's list took equal shares of the stacked height:
    the plots were 46-108 px tall (Journey.act checks every visible plot is at least MIN_PLOT_PX each way)."""
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
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        open_learn(journey.window)
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be")
        journey.act("raising the residual stream", lambda: journey.raise_panel("residual"))
        panel = journey.window.docks["residual"].widget()
        assert panel.stream is not None and not panel.layers_across
        assert panel.plot_view.isVisible(), "the norms' plot is hidden although the panel has room for it"


def test_why_this_token_stacks_its_plots_where_side_by_side_leaves_them_too_narrow(qtbot, tmp_path, monkeypatch):
    """Why this token beside Learn at 1366x768, after the translator, on the bundled MLA model: the dock was
    690 x 545 px, wide enough by its shape for side by side, and the heads' map got 42 px of width (Xvfb)."""
    from tests.app.screen_fit import fit_problems

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        open_learn(journey.window)
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be")
        panel = journey.raise_panel("attribution")
        dock = journey.window.docks["attribution"]
        dock.setMinimumWidth(690)
        dock.setMaximumWidth(690)
        journey.idle("the attribution")
        qtbot.waitUntil(lambda: panel.result is not None, timeout=20000)
        assert panel.width() >= 1.2 * panel.height(), f"the panel is {panel.width()}x{panel.height()}"
        problems = [p for p in fit_problems(journey.window, QSize(1366, 768)) if p.startswith("attribution")]
        assert not problems, problems


def test_show_the_work_keeps_its_plots_legible_beside_learn_at_1366(qtbot, tmp_path, monkeypatch):
    """With Learn open at 1366 x 768 Show the work's dock is about as tall as wide: its map, chart and text one
    above the other left the map 62 px tall and the chart 56 (journey.act checks every visible plot's size). The
    chart is shown legible, or given up where the room has no room for it beside a map of half its size alone, and
    then the readout says so."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question:")
        journey.act("Learn opened", lambda: open_learn(journey.window))
        journey.derive_a_cell()
        derivation = journey.window.docks["derivation"].widget()
        for view in (derivation.view, derivation.products_view):
            if view is derivation.products_view and not view.isVisible():
                assert NO_BARS in derivation.readout.text(), derivation.readout.text()
                continue
            box = view.ci.items and view.sceneRect()
            assert view.height() >= 120 and view.width() >= 120, (view.width(), view.height(), box)


def test_kv_lab_does_not_hold_the_window_taller_than_a_1366x768_screen(qtbot, tmp_path, monkeypatch):
    """Every panel raised once, the centre tab group's minimum is its tallest dock's: KV lab's table over its
    three plots asked 521-541 px, and the window, shrunk by hand, could not be less than 741 px tall: more than
    768 less a title bar."""
    from explorer.app.window.dock_layout import TITLE_BAR_PX

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
        journey.raise_every_panel()
        lab = journey.raise_panel("kv_lab")
        journey.idle("KV lab")
        for width in (1366, 800):                # full width, and as narrow as the window goes (shrunk by hand)
            journey.window.resize(width, 600)
            journey.idle("resized")
            asked = journey.window.minimumSizeHint()
            assert asked.height() <= 768 - TITLE_BAR_PX, f"{width} px wide, the window asks at least {asked}"
        journey.window.resize(1366, 768 - TITLE_BAR_PX)
        journey.idle("resized back")
        plots = [plot.getViewBox() for plot in lab.plot.plots.values()]
        assert all(min(box.width(), box.height()) >= 120 for box in plots), [box.size() for box in plots]


def test_the_grid_progress_reads_whole_beside_learn_at_1366(qtbot, tmp_path, monkeypatch):
    """Learn open at 1366 x 768: the all-heads grid's progress read "step 0: compu"."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question:")
        journey.act("Learn opened", lambda: open_learn(journey.window))
        attention = journey.raise_panel("attention")
        progress = attention.grid_progress
        progress.show()
        progress.filler.step = 12
        progress._show(120, 270)
        journey.idle("the grid's progress")
        label = progress.label
        shown = label.shown() if hasattr(label, "shown") else label.text()     # the words drawn
        assert label.fontMetrics().horizontalAdvance(shown) <= label.contentsRect().width(), (
            f"{shown!r} is cut at {label.contentsRect().width()} px")
        assert shown.startswith("step 12") and shown.endswith("120 / 270"), shown    # the step and counts whole
        head, ellipsis, tail = shown.partition("…")
        assert label.text().startswith(head) and label.text().endswith(tail), (shown, label.text())
        assert not label.grab().isNull(), shown
