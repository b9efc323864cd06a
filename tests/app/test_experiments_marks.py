"""Experiments as the other views show them: an ablated head is marked in the attention grid and the head
atlas, the before/after names the position it compares, and at a long prompt a step alone does not run
the before/after again (each run is the prompt twice through the model)."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels import experiments
from explorer.app.panels.atlas import AtlasPanel
from explorer.app.panels.attention import AttentionPanel
from explorer.app.panels.experiments import ExperimentsPanel
from explorer.app.state.session import Session
from explorer.app.widgets.model_call import thread_executor
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.shared_window import make


@pytest.fixture(scope="module")
def stepped():
    """The tiny Llama, and its trace after a prefill and after each of three steps (one run)."""
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama", seed=5)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")
    decoder = Decoder(loaded)
    traces = [decoder.prefill(np.arange(9) * 7 % 90)]
    for _ in range(3):
        traces.append(decoder.step())
    return loaded, traces


@pytest.fixture
def session(qtbot, stepped):
    session = Session()
    session.set_model(stepped[0].info)
    session.set_token_display(lambda token_id: f"t{token_id}")
    return session


def mark_centres(marks) -> list[tuple[int, int]]:
    """The (row, column) cell under the middle of each drawn cross, read back from the drawn lines."""
    centres = []
    for item in marks.items[::2]:
        middle = item.line().center()
        centres.append((int(round(middle.y())), int(round(middle.x()))))
    return centres


def test_an_ablated_head_is_marked_in_the_attention_grid_and_the_atlas(qtbot, session, stepped):
    loaded, traces = stepped
    attention = make(qtbot, session, AttentionPanel)
    atlas = make(qtbot, session, AtlasPanel)
    atlas.executor = thread_executor(loaded)
    with qtbot.waitSignal(atlas.asker.call.finished, timeout=30000):
        session.set_trace(traces[0])
    assert attention.ablation_marks.items == [] and atlas.ablation_marks.items == []
    session.add_experiment(Intervention(ablations=(HeadAblation(1, 2),)))
    grid = attention.mosaic
    assert [grid.tile_at(*centre) for centre in mark_centres(attention.ablation_marks)] == [(1, 2)]
    assert mark_centres(atlas.ablation_marks) == [(1, 2)]              # the atlas's cell (layer, head)
    session.set_experiments([])
    assert attention.ablation_marks.items == [] and atlas.ablation_marks.items == []


@pytest.fixture
def panel(qtbot, session, stepped):
    panel = ExperimentsPanel(session)
    panel.executor = thread_executor(stepped[0])
    qtbot.addWidget(panel)
    panel.resize(420, 640)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def test_the_before_after_names_the_position_it_compares(qtbot, panel, session, stepped):
    trace = stepped[1][0]
    session.add_experiment(Intervention(ablations=(HeadAblation(0, 1),)))     # with none on, nothing is compared
    with qtbot.waitSignal(panel.asker.call.finished, timeout=20000):
        session.set_trace(trace)
    last = trace.n_tokens - 1
    assert f"after position {last} 't{int(trace.token_ids[last])}'" in panel.summary.text()


def test_at_a_long_prompt_a_step_alone_does_not_run_the_before_after_again(qtbot, panel, session, stepped,
                                                                          monkeypatch):
    monkeypatch.setattr(experiments, "AUTO_COMPARE_TOKENS", 4, raising=False)    # the tiny prompt counts as long
    asked = []
    start = panel.asker.call.start
    monkeypatch.setattr(panel.asker.call, "start", lambda job, executor: asked.append(job) or start(job, executor))
    traces = stepped[1]
    session.add_experiment(Intervention(ablations=(HeadAblation(1, 2),)))     # with none on, nothing is compared
    with qtbot.waitSignal(panel.asker.call.finished, timeout=20000):
        session.set_trace(traces[0])
    for trace in traces[1:]:                                     # three steps
        session.set_trace(trace)
        qtbot.wait(50)
    assert len(asked) == 1
    compared = traces[0].n_tokens - 1
    assert f"after position {compared}" in panel.summary.text()             # the one shown says which it is
    assert f"compared after position {compared}" in panel.readout.text()
    assert panel.compare_button.isEnabled()
    with qtbot.waitSignal(panel.asker.call.finished, timeout=20000):
        panel.compare_button.click()                                          # asked: brought up to date
    assert len(asked) == 2 and f"after position {traces[-1].n_tokens - 1}" in panel.summary.text()
    with qtbot.waitSignal(panel.asker.call.finished, timeout=20000):          # another experiment: asked at once
        session.add_experiment(Intervention(ablations=(HeadAblation(0, 1),)))
    assert len(asked) == 3


def test_a_model_without_the_ablated_layer_drops_the_experiment_and_names_it(qtbot, panel, session, stepped):
    import dataclasses

    session.set_trace(stepped[1][0])
    session.add_experiment(Intervention(ablations=(HeadAblation(1, 3),)))
    session.add_experiment(Intervention(ablations=(HeadAblation(0, 1),)))
    smaller = dataclasses.replace(stepped[0].info, name="one-layer", n_layers=1)
    # a session file's experiments, put back before its model opens: those that fit it stay (drive 21 m19:
    # experiments made on the model open are that model's, and a switch to another clears them all)
    session.set_experiments(session.experiments, for_next_model=True)
    session.set_trace(None)
    session.set_model(smaller)
    assert [e.intervention.ablations for e in session.experiments] == [(HeadAblation(0, 1),)]
    assert panel.list.count() == 1 and panel.list.item(0).text() == "ablate L0.H1 (zero)"
    assert "ablate L1.H3 (zero)" in panel.summary.text() and "layer 1 does not exist" in panel.summary.text()


def test_a_switch_to_another_model_clears_the_experiments_and_says_so(qtbot, panel, session, stepped):
    import dataclasses

    session.set_trace(stepped[1][0])
    session.add_experiment(Intervention(ablations=(HeadAblation(0, 1),)))
    made_on = session.model.name
    session.set_trace(None)
    session.set_model(dataclasses.replace(stepped[0].info, name="another"))
    assert session.experiments == () and panel.list.count() == 0
    assert f"experiments on {made_on} were cleared" in panel.summary.text(), panel.summary.text()
    session.add_experiment(Intervention(ablations=(HeadAblation(1, 1),)))
    session.set_model(dataclasses.replace(stepped[0].info, name="another"))     # a reload of the same model
    assert [e.intervention.ablations for e in session.experiments] == [(HeadAblation(1, 1),)]
