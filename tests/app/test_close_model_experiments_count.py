"""The Experiments dock's count: "0 of 0 experiments on" counted nothing, and it stayed under the Activation
patching tab, which has no experiments to count. With none listed the dock says how to add one (its explicit
empty state); the count is the Interventions tab's, shown only while that tab is up."""
from __future__ import annotations

from PySide6.QtCore import Qt

from explorer.app.panels.experiments import ExperimentsPanel
from explorer.app.state.session import Session
from explorer.core.intervention import Experiment, HeadAblation, Intervention


def shown_panel(qtbot, traced_llama, experiments=()) -> ExperimentsPanel:
    session = Session()
    session.set_model(traced_llama[0].info)
    session.set_experiments(experiments)
    panel = ExperimentsPanel(session)
    panel.executor = lambda job: None                # the model thread: nothing is run here
    qtbot.addWidget(panel)
    panel.resize(420, 640)
    panel.show()
    qtbot.waitExposed(panel)
    session.set_trace(traced_llama[1])
    return panel


def counted(panel) -> str:
    return panel.readout.text().strip() if panel.readout.isVisible() else ""


def test_with_no_experiment_listed_the_dock_says_how_to_add_one_and_counts_nothing(qtbot, traced_llama):
    panel = shown_panel(qtbot, traced_llama)
    assert panel.list.count() == 0
    assert "of 0" not in counted(panel) and counted(panel) == "", counted(panel)
    said = panel.summary.text()
    assert "No experiments yet" in said and "Alt-click" in said, said
    panel.tabs.setCurrentWidget(panel.patching)
    assert counted(panel) == ""


def test_the_count_is_the_interventions_tabs_and_goes_with_it(qtbot, traced_llama):
    ablation = Experiment(Intervention(ablations=(HeadAblation(1, 2),)), on=False)
    panel = shown_panel(qtbot, traced_llama, (ablation,))
    assert counted(panel) == "0 of 1 experiment on"          # one listed, none on: a count that means something
    panel.tabs.setCurrentWidget(panel.patching)
    assert "experiment" not in counted(panel), counted(panel)
    panel.tabs.setCurrentIndex(0)
    assert counted(panel) == "0 of 1 experiment on"
    panel.list.item(0).setCheckState(Qt.CheckState.Checked)
    panel.session.set_experiments(())                         # every experiment removed: the empty state again
    assert "of 0" not in counted(panel) and "No experiments yet" in panel.summary.text()
