"""The stale-view invariant across model kinds: after a model switch every panel, raised, either names the
model and trace it draws (the session's current ones) or is in an explicit state that says why, and nothing
of the model before stays up: no hover line, no job or result keyed to it, no experiment naming its layers.

The panels are read from the registry (panels.registry.PANELS), never listed here; the
switches walk every ordered pair of the four kinds (a GQA decoder, the bundled MLA model, an encoder and the
bundled encoder-decoder) in one window, as a person switching back and forth would.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import transformers  # noqa: E402,F401  (the tiny models are written with it; missing, the run fails, never skips)

from explorer.app.panels import registry
from explorer.app.panels.base import Panel
from explorer.core.intervention import HeadAblation, Intervention
from tests.app.test_encdec_app import make_tiny_bert
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, new_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models"
PROMPT = "To be, or not to be"
# Every ordered pair of the four kinds once: an Eulerian circuit of the complete directed graph on them.
CIRCUIT = ["gqa", "mla", "encoder", "encdec", "gqa", "encoder", "mla", "encdec", "encoder", "gqa", "encdec", "mla",
           "gqa"]


def registered_panels() -> list[str]:
    return [spec.object_name for spec in registry.PANELS]


@pytest.fixture
def models(tmp_path):
    return {"gqa": make_tiny_llama(tmp_path / "tiny-llama"), "mla": BUNDLED / "shakespeare-mla",
            "encoder": make_tiny_bert(tmp_path / "tiny-bert"), "encdec": BUNDLED / "translate-en-zh"}


def switch_to(qtbot, window, folder: Path):
    window.open_model(str(folder))
    return idle(qtbot, window, lambda: window.controller.reference == str(folder) and window.session.trace is not None
                and window.session.trace.model.name == window.controller.summary.name)


def raised(qtbot, window, name: str) -> Panel:
    """The panel of dock `name`, in front of its tabs, drawn, with the jobs it asked answered."""
    dock = window.docks[name]
    dock.show()
    dock.raise_()
    panel = dock.widget()
    qtbot.waitUntil(panel.is_shown, timeout=5000)
    idle(qtbot, window)
    return panel


def touch(qtbot, window) -> dict[str, str]:
    """Raise every panel with a selection made (the last layer and head, a token), an experiment on the last
    head and the pointer over a cell of the attention map; the texts shown that belong to this model."""
    model = window.session.trace.model
    if not (model.is_encoder_only or model.is_encoder_decoder):
        window.session.add_experiment(Intervention(ablations=(HeadAblation(model.n_layers - 1, model.n_heads - 1),)))
        idle(qtbot, window)
    window.session.select(token=1, layer=model.n_layers - 1, head=model.n_heads - 1)
    for name in registered_panels():
        raised(qtbot, window, name)
    attention = raised(qtbot, window, "attention")
    attention.large.on_hover(0, 0)                    # what the map does under the pointer
    hover = attention.readout.text()
    assert hover.startswith(("A[0, 0]", "S[0, 0]")), (model.name, hover, attention.drawn())
    return {"hover": hover, "model": model.name}


def check_panel(window, name: str, panel: Panel, before: dict, pair: str) -> None:
    session, trace = window.session, window.session.trace
    drawn = panel.drawn()
    where = f"{pair}: {name}"
    if drawn.kind == "trace":
        assert (drawn.model_id, drawn.trace_id) == (session.model_id, session.trace_id), where
        assert not panel.note.isVisibleTo(panel), where
    else:
        assert drawn.kind in ("empty", "working", "out of date") and drawn.why, where
        assert panel.note.isVisibleTo(panel) and drawn.why in panel.note.text(), where
        if drawn.kind != "out of date":
            assert not panel.body_widget.isVisibleTo(panel), f"{where} says {drawn.kind} but shows its views"
    assert before["hover"] not in panel.readout.text(), f"{where} still shows the hover of the model before"
    for asker in panel.askers:
        assert before["model"] not in repr(asker.asked), f"{where} waits for or keeps a job of the model before"
    model = trace.model
    result = getattr(panel, "result", None)
    heads = getattr(result, "heads", None)
    if name == "attribution" and heads is not None:
        assert heads.shape == (model.n_layers, model.n_heads), where
    values = getattr(panel, "values", None)
    if name == "atlas" and values is not None:
        assert values.shape == (model.n_layers, model.n_heads), where
    if name == "attention":
        title = panel.large.plot.titleLabel.text if panel.large.plot.titleLabel.isVisible() else ""
        assert "block maxima" not in title, where


def test_every_panel_names_the_new_model_and_trace_or_says_why_after_every_switch(qtbot, tmp_path, dialogs,
                                                                                 models):
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    try:
        window.prompt.set_text(PROMPT)
        switch_to(qtbot, window, models[CIRCUIT[0]])
        for before_kind, kind in zip(CIRCUIT, CIRCUIT[1:]):
            before = touch(qtbot, window)
            switch_to(qtbot, window, models[kind])
            pair = f"{before_kind} -> {kind}"
            model = window.session.trace.model
            for experiment in window.session.experiments:          # none names a layer or head it lacks
                experiment.intervention.check(model.n_layers, model.n_heads)
            for name in registered_panels():
                check_panel(window, name, raised(qtbot, window, name), before, pair)
        assert not dialogs["warnings"], dialogs["warnings"]
    finally:
        window.close()
