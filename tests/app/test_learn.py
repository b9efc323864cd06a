"""The Learn path in a real window on the real core: every stop's Show me reaches the state it describes,
with the bundled model it names (opened offline from resources/models), and turning pages never touches
the person's own prompt or model.

The expectation of each stop is read from resources/learn/stops.json and the bundled models' folders,
and checked on the window: the model the controller opened, the prompt, the steps decoded, the
selection, the dock in front and the kernel the experiments give the layer.
"""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QApplication

from explorer.app.panels.learn import LearnPanel
from explorer.app.window import model_refs
from explorer.app.window.learn_placement import open_learn
from explorer.core.intervention import Kernel, active
from tests.app.shared_window import settle

ROOT = Path(__file__).resolve().parents[2]
STOPS = json.loads((ROOT / "resources" / "learn" / "stops.json").read_text())["stops"]
BUNDLED = {p.name for p in (ROOT / "resources" / "models").iterdir() if p.is_dir()}


def expected_model(state: dict) -> str:
    """The first model the stop names that is bundled (nothing is pulled in the test's store)."""
    return next(name for name in state["models"] if name in BUNDLED)


def in_front(window, name: str) -> bool:
    return not window.docks[name].visibleRegion().isEmpty()


def test_twelve_stops_each_name_bundled_models_and_panels_the_window_has(real_core_window):
    assert len(STOPS) == 12
    for stop in STOPS:
        state = stop["state"]
        assert any(name in BUNDLED for name in state["models"]), stop["id"]
        assert state["panel"] in real_core_window.docks, stop["id"]
        assert 1 <= len(stop["try"]) <= 2 and stop["text"] and stop["formula"]


def test_every_stops_show_me_reaches_its_state(qtbot, real_core_window):
    panel = open_learn(real_core_window)
    assert real_core_window.learn_dock.isVisible()
    for index, stop in enumerate(STOPS):
        state = stop["state"]
        panel.go_to(index)
        with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
            panel.show_button.click()
        model = expected_model(state)
        assert Path(real_core_window.controller.reference).name == model, stop["id"]
        assert real_core_window.session.model.name == real_core_window.controller.summary.name
        assert real_core_window.prompt.text == (state.get("prompt") or model_refs.default_prompt(model))
        settle(QApplication.instance(), lambda: not real_core_window.worker.busy)
        trace = real_core_window.session.trace
        assert trace is not None and not real_core_window.session.out_of_date, stop["id"]
        if not real_core_window.session.model.is_encoder_decoder:
            assert trace.n_steps == 1 + state.get("steps", 0), stop["id"]
        else:
            assert trace.n_steps >= state.get("steps", 0), stop["id"]
        selection = real_core_window.session.selection
        assert (selection.layer, selection.head) == (state.get("layer", 0), state.get("head", 0)), stop["id"]
        assert selection.attention == state.get("attention", "self")
        qtbot.waitUntil(lambda: in_front(real_core_window, state["panel"]), timeout=5000)
        where = "cross" if state.get("attention") == "cross" else "self"
        kernel = active(real_core_window.session.experiments).kernel_of(state.get("layer", 0), where)
        if state.get("kernel"):
            assert kernel == Kernel(state["kernel"]), stop["id"]
        else:
            assert kernel.is_model_softmax, f"{stop['id']} kept an earlier stop's kernel"
        assert panel.status.text().startswith("Shown:"), panel.status.text()
    assert not real_core_window.warnings


def test_back_and_next_keep_the_persons_own_prompt_and_model(qtbot, real_core_window):
    real_core_window.prompt.set_text("my own words")
    panel = open_learn(real_core_window)
    for _ in range(3):
        panel.next_button.click()
    panel.back_button.click()
    assert panel.index == 2 and panel.stop.id == STOPS[2]["id"]
    assert STOPS[2]["title"] in panel.text.toPlainText()
    assert real_core_window.prompt.text == "my own words"
    assert real_core_window.controller.reference is None and real_core_window.controller.loading is None
    assert not panel.own_button.isEnabled()


def test_back_to_my_session_restores_model_prompt_and_experiments(qtbot, real_core_window):
    app = QApplication.instance()
    real_core_window.prompt.set_text("my own words")
    real_core_window.open_model("shakespeare-mqa")
    settle(app, lambda: real_core_window.session.trace is not None and not real_core_window.worker.busy)
    panel = open_learn(real_core_window)
    panel.go_to(next(i for i, s in enumerate(STOPS) if s["state"].get("kernel")))
    with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
        panel.show_button.click()
    assert Path(real_core_window.controller.reference).name == "shakespeare-gqa"
    assert real_core_window.session.experiments
    assert panel.own_button.isEnabled()
    panel.own_button.click()
    settle(app, lambda: real_core_window.controller.loading is None and not real_core_window.worker.busy
           and real_core_window.session.trace is not None)
    assert real_core_window.controller.reference == "shakespeare-mqa"
    assert real_core_window.prompt.text == "my own words" and real_core_window.session.experiments == ()


def test_the_help_menu_opens_learn(qtbot, real_core_window):
    (action,) = [a for a in real_core_window.menus.help.actions() if "Learn" in a.text()]
    action.trigger()
    assert real_core_window.learn_dock.isVisible() and isinstance(real_core_window.learn_dock.widget(), LearnPanel)
    action.trigger()                               # again: the same dock, not a second one
    docks = real_core_window.findChildren(type(real_core_window.learn_dock))
    assert len([d for d in docks if d.objectName() == "learn_dock"]) == 1
