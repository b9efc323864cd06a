"""The Attention panel's kernel control writes the selected layer's kernel into the session's
experiments (the values the Experiments dock lists and the model runs under) and shows the kernel in use."""
from __future__ import annotations

import pytest

from explorer.app.panels.attention import AttentionPanel
from explorer.app.state.session import Session
from explorer.core.intervention import SOFTMAX, Experiment, HeadAblation, Intervention, Kernel, KernelChoice, active


@pytest.fixture
def panel(qtbot, traced_llama):
    session = Session()
    session.set_model(traced_llama[0].info)
    panel = AttentionPanel(session)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    qtbot.waitExposed(panel)
    session.set_trace(traced_llama[1])
    return panel


def _layer_kernels(session, layer):
    return [e.intervention.kernels for e in session.experiments
            if any(c.layers == (layer,) for c in e.intervention.kernels)]


def test_relu_on_layer_1_puts_a_relu_kernel_experiment_for_layer_1_in_the_session(panel):
    session, control = panel.session, panel.kernel_control
    session.select(layer=1)
    control.combo.setCurrentText("relu")
    assert session.experiments == (Experiment(Intervention(kernels=(KernelChoice(Kernel("relu"), (1,)),))),)
    assert active(session.experiments).kernel_of(1) == Kernel("relu")
    assert active(session.experiments).kernel_of(0) == SOFTMAX                 # only the selected layer
    control.combo.setCurrentText("exp(S/τ)")
    control.tau.setValue(0.5)
    assert _layer_kernels(session, 1) == [(KernelChoice(Kernel("exp", 0.5), (1,)),)]     # replaced, not added
    control.combo.setCurrentText("model's softmax")
    assert session.experiments == ()                                           # back to the model's own


def test_the_control_shows_the_kernel_in_use_for_the_selected_layer(panel):
    session, control = panel.session, panel.kernel_control
    ablation = Experiment(Intervention(ablations=(HeadAblation(0, 1),)))
    session.set_experiments((ablation, Experiment(Intervention(kernels=(KernelChoice(Kernel("linear"), (1,)),)))))
    session.select(layer=1)
    assert control.combo.currentText() == "linear"
    session.select(layer=0)
    assert control.combo.currentText() == "model's softmax" and not control.tau.isEnabled()
    session.set_experiments((ablation, Experiment(Intervention(kernels=(KernelChoice(Kernel("exp", 3.0), None),)))))
    assert control.combo.currentText() == "exp(S/τ)" and control.tau.value() == 3.0
    control.combo.setCurrentText("model's softmax")                            # overrides "every layer" here
    assert active(session.experiments).kernel_of(0) == SOFTMAX
    assert active(session.experiments).kernel_of(1) == Kernel("exp", 3.0)
    assert control.combo.currentText() == "model's softmax"
    assert session.experiments[0] == ablation                                  # the others are kept
