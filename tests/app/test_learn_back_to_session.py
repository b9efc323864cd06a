"""Learn ▸ "Back to my session" brings back the person's whole session, not only its model and prompt: after
a Show me that opened another model, the decoded tokens come back (the same ids, sampled ones included), with
the step shown, the selection, the sampling and the experiments that were on (drive19 S3: "step 2 · 24 tokens"
came back as "step 0 (prefill) · 22 tokens").

The expectation is what the window showed before Show me, read from it and compared after; nothing is taken
from the code under test."""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QApplication

from explorer.app.widgets.kernel_control import with_kernel
from explorer.app.window.learn_placement import open_learn
from explorer.core.intervention import Kernel, active
from explorer.views.session_state import SamplingSettings
from tests.app.shared_window import settle

ROOT = Path(__file__).resolve().parents[2]
STOPS = json.loads((ROOT / "resources" / "learn" / "stops.json").read_text())["stops"]
OWN_MODEL = "shakespeare-mqa"
SAMPLING = SamplingSettings(temperature=1.5, top_k=0, top_p=1.0, seed=11)     # sampling on: a re-run would differ


def idle(window) -> bool:
    return window.controller.loading is None and not window.worker.busy and window.session.trace is not None


def a_stop_on_another_model() -> int:
    """The first stop whose model is a bundled one other than the person's, with a kernel of its own."""
    return next(i for i, s in enumerate(STOPS) if OWN_MODEL not in s["state"]["models"] and s["state"].get("kernel"))


def test_back_to_my_session_brings_back_the_decoded_tokens_step_and_selection(qtbot, real_core_window):
    app, w = QApplication.instance(), real_core_window
    w.prompt.set_text("ROMEO: But soft, what light")
    w.sampling_bar.set_settings(SAMPLING)
    w.open_model(OWN_MODEL)
    settle(app, lambda: idle(w))
    own_kernel = with_kernel((), 0, "self", Kernel("relu"))
    w.session.set_experiments(own_kernel)
    settle(app, lambda: idle(w))
    for _ in range(2):
        w.controller.step()
        settle(app, lambda: idle(w))
    w.session.select(layer=2, head=1, step=1, token=3)
    settle(app, lambda: idle(w))
    before = w.session.trace
    ids, n_steps, selection = tuple(int(i) for i in before.token_ids), before.n_steps, w.session.selection
    step_field = w.status.fields["step"].text()
    assert n_steps == 3 and (selection.layer, selection.head, selection.step) == (2, 1, 1)

    panel = open_learn(w)
    panel.go_to(a_stop_on_another_model())
    with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
        panel.show_button.click()
    assert Path(w.controller.reference).name != OWN_MODEL
    assert panel.own_button.isEnabled()
    panel.own_button.click()
    settle(app, lambda: idle(w) and not panel.tour.busy)

    assert w.controller.reference == OWN_MODEL
    assert w.prompt.text == "ROMEO: But soft, what light"
    after = w.session.trace
    assert after.n_steps == n_steps
    assert tuple(int(i) for i in after.token_ids) == ids
    assert w.session.selection == selection
    assert w.status.fields["step"].text() == step_field
    assert w.sampling_bar.settings() == SAMPLING
    assert w.session.experiments == own_kernel
    assert active(w.session.experiments).kernel_of(0, "self") == Kernel("relu")
    assert not w.warnings


def test_show_me_again_while_the_session_comes_back_keeps_the_persons_session(qtbot, real_core_window):
    """Show me pressed before the replay of "Back to my session" arrived: the session kept is still the
    person's (not the half-restored window), so a second Back brings their decoded tokens."""
    app, w = QApplication.instance(), real_core_window
    w.prompt.set_text("ROMEO: But soft, what light")
    w.sampling_bar.set_settings(SAMPLING)
    w.open_model(OWN_MODEL)
    settle(app, lambda: idle(w))
    for _ in range(2):
        w.controller.step()
        settle(app, lambda: idle(w))
    ids = tuple(int(i) for i in w.session.trace.token_ids)
    panel = open_learn(w)
    panel.go_to(a_stop_on_another_model())
    for _ in range(2):
        with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
            panel.show_button.click()
        panel.own_button.click()                  # the second time, the Show me above came before the replay
    settle(app, lambda: idle(w) and not panel.tour.busy)
    assert w.controller.reference == OWN_MODEL
    assert tuple(int(i) for i in w.session.trace.token_ids) == ids
