"""The Experiments dock around a real Session and a tiny model: the list, its on/off boxes, Alt-click
ablation, and the next token before and after, as the core computes it."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from explorer.app.panels.experiments import ExperimentsPanel, parse_layers
from explorer.app.state.session import Session
from explorer.app.widgets.model_call import thread_executor
from explorer.core.errors import ExplorerError
from explorer.core.intervention import Experiment, HeadAblation, Intervention, Kernel, KernelChoice, active


@pytest.fixture
def panel(qtbot, traced_llama):
    session = Session()
    session.set_model(traced_llama[0].info)
    session.set_token_display(lambda token_id: f"t{token_id}")
    panel = ExperimentsPanel(session)
    panel.executor = thread_executor(traced_llama[0])
    qtbot.addWidget(panel)
    panel.resize(420, 640)
    panel.show()
    qtbot.waitExposed(panel)
    session.set_trace(traced_llama[1])                  # no experiment on: nothing is compared (test below)
    return panel


def _answer(qtbot, panel, action) -> None:
    with qtbot.waitSignal(panel.asker.call.finished, timeout=20000):
        action()


def test_an_ablation_shows_the_core_comparison_and_unticking_it_undoes_it(qtbot, panel, traced_llama):
    from explorer.core.experiments import compare_next_token

    loaded, trace = traced_llama
    assert panel.result is None and panel.table.rowCount() == 0                # nothing on yet
    panel.layer_box.setValue(1)
    panel.head_box.setValue(2)
    _answer(qtbot, panel, lambda: panel._adding(panel._add_ablation))
    expected = compare_next_token(loaded, trace.token_ids, Intervention(ablations=(HeadAblation(1, 2),)), 8)
    assert panel.result.kl == pytest.approx(expected.kl) and panel.result.kl > 0
    assert panel.table.item(0, 2).text() == f"'t{int(expected.after_ids[0])}'"
    assert panel.table.item(0, 3).text() == f"{expected.after_probs[0]:.3f}"
    assert "KL(before ‖ after)" in panel.summary.text() and "Δ" in panel.summary.text()
    assert panel.list.item(0).text() == "ablate L1.H2 (zero)"
    held = panel.session.comparison                                   # handed on for the Next-token panel
    assert held is not None and held[0] == Intervention(ablations=(HeadAblation(1, 2),))
    assert held[1] == tuple(int(i) for i in trace.token_ids) and held[2].kl == pytest.approx(expected.kl)
    panel.list.item(0).setCheckState(Qt.CheckState.Unchecked)
    assert not panel.experiments[0].on and not panel.asker.call.running                # nothing asked
    assert panel.result is None and panel.table.rowCount() == 0 and "Turn an experiment on" in panel.summary.text()
    _answer(qtbot, panel, lambda: panel.list.item(0).setCheckState(Qt.CheckState.Checked))   # on again: asked
    assert panel.result.kl == pytest.approx(expected.kl)


def test_with_no_experiment_on_the_model_is_not_asked_and_the_panel_says_how_to_compare(qtbot, traced_llama):
    session = Session()
    session.set_model(traced_llama[0].info)
    session.set_experiments([Experiment(Intervention(ablations=(HeadAblation(1, 2),)), on=False)])
    panel = ExperimentsPanel(session)
    asked = []
    panel.executor = asked.append                 # the model thread: a job handed to it is recorded, never run
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    session.set_trace(traced_llama[1])
    panel.compare_button.click()
    assert asked == [] and panel.result is None and not panel.compare_button.isEnabled()
    assert panel.summary.text() == "Turn an experiment on to compare the next token before and after it."
    assert panel.readout.text() == "0 of 1 experiment on"
    session.set_experiments([Experiment(Intervention(ablations=(HeadAblation(1, 2),)))])
    assert len(asked) == 1                                                    # turned on: compared at once


def test_an_experiment_the_session_gains_is_listed_and_a_kernel_is_added_by_its_row(qtbot, panel):
    _answer(qtbot, panel, lambda: panel.session.add_experiment(Intervention(ablations=(HeadAblation(0, 3),))))
    assert panel.experiments == (Experiment(Intervention(ablations=(HeadAblation(0, 3),))),)
    assert panel.list.item(0).text() == "ablate L0.H3 (zero)"
    panel.kernel_box.setCurrentText("exp")
    panel.tau_box.setValue(2.0)
    panel.kernel_layers.setText("1")
    _answer(qtbot, panel, lambda: panel._adding(panel._add_kernel))
    assert active(panel.experiments).kernel_of(1) == Kernel("exp", 2.0)
    assert panel.list.item(1).text() == "exp(S/2) in layer 1"
    panel.list.setCurrentRow(0)
    _answer(qtbot, panel, panel.remove_selected)
    assert [e.intervention.kernels for e in panel.experiments] == [(KernelChoice(Kernel("exp", 2.0), (1,)),)]


def test_the_list_is_saved_in_the_session_file_and_bad_layers_are_named(qtbot, panel, traced_llama, tmp_path):
    from explorer.views.session_state import SessionState, load, save

    experiments = (Experiment(Intervention(ablations=(HeadAblation(1, 0, "mean"),)), on=False),
                   Experiment(Intervention(kernels=(KernelChoice(Kernel("exp", 0.5), (0,)),))))
    panel.session.set_experiments(experiments)
    assert panel.list.item(0).checkState() == Qt.CheckState.Unchecked and panel.list.count() == 2
    path = tmp_path / "s.json"
    save(path, SessionState.of("tiny", "x", SessionState().sampling, traced_llama[1],
                               experiments=panel.session.experiments))
    assert load(path).experiments == experiments
    assert parse_layers("all") is None and parse_layers("1, 3") == (1, 3)
    with pytest.raises(ExplorerError, match="'one'"):
        parse_layers("one")
    panel.kernel_layers.setText("9")
    panel._adding(panel._add_kernel)
    assert "layer 9 does not exist" in panel.error_line.message


def test_alt_click_on_a_head_of_the_attention_grid_asks_to_ablate_it(qtbot, monkeypatch):
    from PySide6.QtGui import QGuiApplication

    from explorer.app.panels import attention
    from tests.app.synthetic_trace import build_trace

    session = Session()
    panel = attention.AttentionPanel(session)
    qtbot.addWidget(panel)
    panel.resize(900, 600)
    panel.show()
    qtbot.waitExposed(panel)
    session.set_trace(build_trace(n_layers=3, n_heads=4, prompt_len=6, steps=1))
    panel.refresh()
    row, col = next((r, c) for r in range(200) for c in range(200) if panel.mosaic.tile_at(r, c) == (2, 1))
    monkeypatch.setattr(QGuiApplication, "keyboardModifiers", staticmethod(lambda: Qt.KeyboardModifier.AltModifier))
    panel._click_grid(row, col)
    ablated = (Experiment(Intervention(ablations=(HeadAblation(2, 1),))),)
    assert session.experiments == ablated and (session.selection.layer, session.selection.head) == (0, 0)
    monkeypatch.setattr(QGuiApplication, "keyboardModifiers", staticmethod(lambda: Qt.KeyboardModifier.NoModifier))
    panel._click_grid(row, col)
    assert session.experiments == ablated and (session.selection.layer, session.selection.head) == (2, 1)


@pytest.fixture(scope="module")
def with_tokens(tmp_path_factory):
    """A tiny llama folder with a tokenizer: the patching tab reads the prompts' tokens."""
    from explorer.core.runtime import load_model
    from tests.core.tiny_checkpoints import write_hf_folder

    folder = tmp_path_factory.mktemp("tiny-llama")
    write_hf_folder(folder)
    return load_model(str(folder))


def test_the_patching_tab_runs_the_core_map_with_progress(qtbot, panel, with_tokens):
    from explorer.core import patching

    view = panel.patching
    panel.executor = thread_executor(with_tokens)
    view.clean.setText("The cat sat on the")
    view.corrupt.setText("The hat sat on the")
    view.target.setText(" m")
    view.against.setText("at")
    seen = []
    view.call.progress_changed.connect(lambda fraction, what: seen.append(what))
    with qtbot.waitSignal(view.call.finished, timeout=30000):
        assert view.run()
    tokens = with_tokens.tokenizer
    expected = patching.patch_map(with_tokens, tokens.encode("The cat sat on the").ids,
                                  tokens.encode("The hat sat on the").ids, tokens.encode(" m").ids[0],
                                  tokens.encode("at").ids[0], "head")
    np.testing.assert_allclose(view.result.values, expected.values, atol=1e-6)
    assert view.heatmap.shape == expected.values.shape and seen[-1] == "8 of 8 sites"
    assert "clean" in view.caption.text() and view.run_button.isEnabled()
    view.target.setText(" Paris")
    with qtbot.waitSignal(view.call.failed, timeout=30000):
        view.run()
    assert "not one" in view.empty.text() and not panel.error_line.message     # said once, in the tab


def test_cancel_stops_the_map_and_the_caption_says_so(qtbot, panel, with_tokens):
    view = panel.patching
    queued = []
    panel.executor = queued.append                   # the model thread is busy: the job waits in its queue
    view.clean.setText("The cat sat on the")
    view.corrupt.setText("The hat sat on the")
    view.target.setText(" m")
    view.against.setText("at")
    assert view.run() and view.cancel_button.isEnabled() and not view.run_button.isEnabled()
    view.cancel_button.click()
    with qtbot.waitSignal(view.call.finished, timeout=30000):
        thread_executor(with_tokens)(queued[0])
    assert not view.result.complete and np.isnan(view.result.values).all()
    assert "Cancelled" in view.caption.text() and view.run_button.isEnabled()


def test_the_attention_header_names_the_kernel_in_use(traced_llama):
    from explorer.app.panels.attention_header import attention_formula
    from explorer.core.decode import Decoder

    loaded = traced_llama[0]
    swapped = Decoder(loaded, intervention=Intervention(kernels=(KernelChoice(Kernel("relu"), (1,)),))).prefill(
        np.arange(6))
    assert ("A = Z⁻¹ max(0, Q_h K_hᵀ · scale) (intervened)"
            in attention_formula(swapped, "self", "weights", 1, 0, (6, 6)))
    assert "A = softmax(Q_h K_hᵀ / √d_{QK})" in attention_formula(swapped, "self", "weights", 0, 0, (6, 6))


def test_an_ablation_added_twice_is_listed_once(qtbot):
    """Ablating L3.H1 on the bundled MLA model and again on the GQA model (experiments that fit are kept across
    a switch) listed "ablate L3.H1 (zero)" twice: "3 of 3 experiments on" for two different ablations."""
    session = Session()
    panel = ExperimentsPanel(session)
    qtbot.addWidget(panel)
    ablation = Intervention(ablations=(HeadAblation(3, 1),))
    panel.add(ablation)
    session.set_experiments((Experiment(ablation, on=False),))             # ticked off
    panel.add(Intervention(ablations=(HeadAblation(3, 1),)))                                # the same, again
    assert [(e.intervention, e.on) for e in session.experiments] == [(ablation, True)], session.experiments
    assert panel.list.count() == 1


def test_a_model_switch_clears_the_patching_map_and_an_encoder_cannot_run_it(qtbot, panel, with_tokens):
    """Found driving the app: SmolLM2's 30 x 9 patching map, its "270 of 270 sites" and its logit diff stayed
    up under MLA, Gemma, MiniLM and the translator; on an encoder Run map failed with an error."""
    from tests.app.synthetic_trace import build_trace

    view, session = panel.patching, panel.session
    session.set_model(with_tokens.info)
    panel.executor = thread_executor(with_tokens)
    view.clean.setText("The cat sat on the")
    view.corrupt.setText("The hat sat on the")
    view.target.setText(" m")
    view.against.setText("at")
    with qtbot.waitSignal(view.call.finished, timeout=30000):
        assert view.run()
    assert view.heatmap.shape != (0, 0) and "clean" in view.caption.text()

    encoder = build_trace(encoder_only=True, prompt_len=6)
    session.set_model(encoder.model)                     # another model: the map is not this model's
    session.set_trace(encoder)
    assert view.result is None and view.heatmap.shape == (0, 0), "the previous model's map stays up"
    assert "clean" not in view.caption.text() and view.progress.value() == 0
    assert "needs a decoder" in view.empty.text() and not view.run_button.isEnabled()
    assert "needs a decoder" not in view.caption.text()            # said once, in the map's place (drive 19)
    assert not view.run(), "an encoder's patching map was asked"

    queued = []
    session.set_model(with_tokens.info)                  # a decoder again: Run map is offered
    panel.executor = queued.append                       # the model thread busy: the job waits
    assert view.run_button.isEnabled() and view.run()
    session.set_model(encoder.model)                     # the model switched under a running map
    assert not view.call.running and not view.cancel_button.isEnabled()
    session.set_model(with_tokens.info)
    assert view.run_button.isEnabled(), "Run map stays greyed after a map dropped by a model switch"
