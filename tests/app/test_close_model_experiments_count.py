"""The Experiments dock's count: "0 of 0 experiments on" counted nothing, and it stayed under the Activation
patching tab, which has no experiments to count. With none listed the dock says how to add one (its explicit
empty state); the count is the Interventions tab's, shown only while that tab is up; under the patching tab the
line says that no map was run yet, until one is."""
from __future__ import annotations

from PySide6.QtCore import Qt

from explorer.app.panels.experiments import ExperimentsPanel
from explorer.app.state.session import Session
from explorer.app.widgets.model_call import thread_executor
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
    assert "experiment" not in counted(panel) and "No patching map yet" in counted(panel), counted(panel)


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


def test_under_the_patching_tab_the_line_says_no_map_until_one_is_run(qtbot, traced_llama, tmp_path):
    from explorer.core.runtime import load_model
    from tests.core.tiny_checkpoints import write_hf_folder

    write_hf_folder(tmp_path / "tiny")                       # a tokenizer: the patching tab reads the prompts
    with_tokens = load_model(str(tmp_path / "tiny"))
    panel = shown_panel(qtbot, traced_llama)
    panel.executor = thread_executor(with_tokens)
    panel.tabs.setCurrentWidget(panel.patching)
    assert "No patching map yet" in counted(panel)
    view = panel.patching
    view.clean.setText("The cat sat on the")
    view.corrupt.setText("The hat sat on the")
    view.target.setText(" m")
    view.against.setText("at")
    with qtbot.waitSignal(view.call.finished, timeout=30000):
        view.run_button.click()
        assert view.call.running and counted(panel) == ""                          # running: its progress bar says so
    assert view.result is not None and counted(panel) == "", counted(panel)
