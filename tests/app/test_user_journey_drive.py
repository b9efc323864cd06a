"""What a person driving the whole window on a bare X screen saw, each as a check through the real window.

Each test opens the real main window offscreen on an emulated screen (tests/app/conftest.py's `screen`), opens a
model through the real core, and does what the person did: raises a panel, presses its button, switches the model.
It then compares what the window says with what is true of the model (its kind from its config, its tokens from
its tokenizer), never with a sentence copied from the panel.
"""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the tiny models are written with it; missing, the run fails, never skips)
from PySide6.QtWidgets import QApplication

from tests.app.journey import BUNDLED, walk_on_screen
from tests.app.tiny_model import make_tokenizer, save_random_model

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.fixture
def journey(qtbot, tmp_path, screen, dialogs):
    """A person's journey (tests/app/journey.py) through a new main window sized to the emulated `screen`."""
    yield from walk_on_screen(qtbot, tmp_path, screen, dialogs)


def test_the_what_if_tab_never_calls_a_decoder_an_encoder_decoder(journey):
    """KV lab ▸ What-if on a decoder-only model offers targets; its summary must not say the model is an
    encoder-decoder (it said so for SmolLM2 and the bundled GQA model, set while the target box was still empty)."""
    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
    model = journey.window.session.model
    assert not model.is_encoder_decoder and not model.is_encoder_only      # a decoder, by its config
    panel = journey.raise_panel("kv_lab")
    journey.act("the what-if tab", lambda: panel.tabs.setCurrentIndex(1))
    assert panel.variant_box.count() > 0 and panel.run_button.isEnabled()
    said = f"{panel.targets_note.text()} {panel.run_summary.text()}"
    assert "encoder" not in said, f"a decoder's what-if tab reads {said!r}"


def deep_llama(folder):
    """A random 12-layer Llama: enough layers for two-digit row labels (L10, L11) in the all-heads grid."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(folder)
    config = transformers.LlamaConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=12, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=64, tie_word_embeddings=False,
                                      bos_token_id=0, eos_token_id=0)
    return save_random_model(transformers.LlamaForCausalLM, config, folder)


def drawn_labels(axis) -> list[tuple[str, float]]:
    """(text, width in the axis's current font) of every tick label the axis draws, as pyqtgraph lays it out."""
    from PySide6.QtGui import QFontMetricsF, QImage, QPainter

    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        axis.picture = None
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    metrics = QFontMetricsF(axis.style["tickFont"] or QApplication.font())
    return [(text, metrics.horizontalAdvance(text)) for _rect, _flags, text in (specs[2] if specs else []) if text]


def test_presentation_keeps_the_key_labels_whole(journey):
    """View ▸ Presentation enlarges every text 1.4 times: the large map's upright key labels must still fit
    whole in the key axis (SmolLM2 on a 1920x1080 X screen: '␣capital' read '␣capit')."""
    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question")
    panel = journey.raise_panel("attention")
    key_axis = panel.large.axes["top"]
    assert key_axis.upright, "the key labels are written across: nothing to check"
    assert not cut_key_labels(key_axis), f"at the normal text size: {cut_key_labels(key_axis)}"
    journey.act("View ▸ Presentation", journey.window.menus.presentation.trigger)
    assert journey.window.presentation.on
    assert not cut_key_labels(key_axis), f"in Presentation: {cut_key_labels(key_axis)}"


def cut_key_labels(key_axis) -> list[str]:
    """The upright labels longer than the key axis is tall (less its title, "key")."""
    title_px = key_axis.label.boundingRect().height() if key_axis.label.isVisible() else 0.0
    room = key_axis.boundingRect().height() - title_px
    return [f"{text!r} is {width:.0f} px in a {room:.0f} px axis" for text, width in drawn_labels(key_axis)
            if width > room]


def test_presentation_keeps_the_grid_layer_labels(journey, tmp_path):
    """In Presentation the all-heads grid must still label rows past L9 (SmolLM2: the labels stopped at L9 of 30)."""
    journey.open(deep_llama(tmp_path / "deep-llama"), "To be, or not to be")
    panel = journey.raise_panel("attention")
    before = [text for text, _width in drawn_labels(panel.grid.axes["left"])]
    assert any(text in before for text in ("L10", "L11")), f"the grid labels only {before} of 12 layers"
    journey.act("View ▸ Presentation", journey.window.menus.presentation.trigger)
    rows = [text for text, _width in drawn_labels(panel.grid.axes["left"])]
    assert any(text in rows for text in ("L10", "L11")), f"in Presentation the grid labels only {rows} of 12 layers"


def test_an_opened_session_does_not_say_it_is_still_running(journey, tmp_path):
    """File ▸ Open Session: once the session's trace is back and the model is idle, the status bar must not go on
    saying 'Opening the session: running its 5 prompt tokens…' (seen on a 1920x1080 X screen after the session
    had opened)."""
    from explorer.app.state import session_file

    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
    window = journey.window
    journey.act("Step", window.actions.step.trigger)
    saved = window.session.trace
    path = tmp_path / "session.json"
    session_file.save(path, window.session_state())
    window.prompt.set_text("Something else")
    journey.act("Run something else", window.actions.run.trigger)
    journey.act("Open Session", lambda: window.menus.open_session_file(str(path)))
    trace = window.session.trace
    assert trace is not None and trace.token_ids.tolist() == saved.token_ids.tolist()
    said = window.statusBar().currentMessage()
    assert "running" not in said, f"idle, with the session open, the status bar says {said!r}"


def test_after_stop_the_window_asks_no_replay_by_itself(journey, monkeypatch):
    """Run an edited prompt and Stop at once while the model is slow (SmolLM2 on two busy cores), then click a
    token (Next token in sight) and press Step while the trace shown is given back to the decoder: once those
    are asked, the window must ask the model thread for nothing more by itself. On a bare X screen it instead
    stayed busy for two minutes, the model thread handing back 544 empty traces and replaying as many times."""
    import time

    from explorer.core import model as core_model

    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
    window = journey.window
    journey.act("Step", window.actions.step.trigger)
    journey.raise_panel("next_token")                 # its candidates at a selected token are asked of the decoder
    journey.act("selecting a token inside the prompt", lambda: window.session.select(token=2, step=None))
    forward = core_model.Block.forward

    def slow_block(self, *args, **kwargs):          # a layer as slow as SmolLM2's under load, so Stop lands mid-run
        time.sleep(0.5)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(core_model.Block, "forward", slow_block)
    replays, emptied = [], []
    replay = window.worker.replay
    monkeypatch.setattr(window.worker, "replay", lambda *a, **k: (replays.append(a or k), replay(*a, **k))[1])
    window.worker.trace_ready.connect(lambda trace, *a: emptied.append(1) if not trace.steps else None)
    shown = window.session.trace
    window.prompt.set_text(window.prompt.text + " again")
    replaying = []
    window.worker.run_progress.connect(lambda _fraction, text: replaying.append(text) if "Replaying" in text else None)
    window.actions.run.trigger()
    window.actions.stop.trigger()
    # Stop has landed: the give-back replay has begun, or (a run stopped in its prefill keeps the run before on
    # the decoder, c4d849f) there was nothing to give back and the model thread is idle
    journey.qtbot.waitUntil(lambda: bool(replaying) or not window.worker.busy, timeout=20000)
    window.session.select(token=1, step=None)                       # a person clicks another token meanwhile
    window.actions.step.trigger()                                    # and presses Step
    asked = len(replays)                  # each of these asks the decoder for the trace shown first, at most
    try:
        journey.qtbot.waitUntil(lambda: not window.worker.busy or len(replays) > asked + 4, timeout=60000)
    finally:
        monkeypatch.setattr(core_model.Block, "forward", forward)    # so that a chain of replays can end
    assert len(replays) == asked, f"after Stop, a click and Step (asking {asked} replays), the window asked " \
        f"{len(replays) - asked} more by itself ({len(emptied)} empty traces handed back)"
    journey.qtbot.waitUntil(lambda: not window.worker.busy, timeout=60000)
    assert window.session.trace is not None and window.session.trace.n_tokens >= shown.n_tokens


def test_a_folder_holding_one_gguf_opens_it(journey, tmp_path, tiny_gguf):
    """File ▸ Open on a pulled GGUF model's folder (the store's smollm2-135m holds one .gguf and pulled.json) opens
    the model in it, as opening the .gguf itself does; it said the folder '… has no config.json, so it is not a
    Hugging Face model folder'."""
    folder = tmp_path / "pulled-tiny"
    folder.mkdir()
    (folder / "tiny.gguf").write_bytes(tiny_gguf)
    (folder / "pulled.json").write_text("{}")
    journey.open(folder, "To be, or not")
    assert journey.window.session.trace is not None and not journey.warnings


def test_presentation_on_and_off_after_reset_layout_fits_the_screen(journey):
    """After a journey on the model, View ▸ Reset Layout twice, then Presentation on and off: the window must still
    fit the screen (on a bare 1366x768 X screen it came back 1366x770, its status bar's last rows off the screen;
    offscreen 1366x774). At 1920x1080 it fits."""
    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
    window = journey.window
    journey.step_back_branch()
    journey.raise_every_panel()
    journey.cancels()
    for _ in range(2):
        journey.act("View ▸ Reset Layout", window.default_layout)
    journey.act("View ▸ Presentation", window.menus.presentation.trigger)
    journey.act("View ▸ Presentation off", window.menus.presentation.trigger)
    assert not window.presentation.on


@pytest.fixture(scope="module")
def minilm():
    """The pulled MiniLM (an encoder), found before a test's own empty store replaces the run's."""
    from explorer.core import store

    folder = store.pulled_path("minilm-l6")
    if folder is None:
        pytest.fail("minilm-l6 is not pulled: `make test` pulls it")
    return folder


def test_the_kv_cache_axes_of_an_encoder_keep_their_unit(journey, minilm):
    """MiniLM's KV cache panel: no axis is rescaled behind its unit (on a 1920x1080 X screen its tokens axis read
    'tokens (x0.001)'); Journey.act checks every axis in sight after each action."""
    journey.open(minilm, "The capital of France is Paris.")
    panel = journey.raise_panel("kv_cache")
    journey.act("KV cache raised", lambda: None)
    from PySide6.QtWidgets import QTabWidget

    for tabs in panel.findChildren(QTabWidget):
        for index in range(tabs.count()):
            journey.act(f"KV cache tab {index}", lambda tabs=tabs, index=index: tabs.setCurrentIndex(index))


def test_learn_stop_three_keeps_the_q_k_v_plots_legible(journey, screen, request):
    """Help ▸ Learn, stop 3 (Attention as a soft lookup), Show me: the Q / K / V panel it opens beside Learn keeps
    plots of at least MIN_PLOT_PX each way (on a bare 1366x768 X screen Q_0, K_0 and V_0 were 78 px wide).
    Journey.act checks every visible plot after each action."""
    from explorer.app.window.learn_placement import open_learn

    journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is the question:")
    panel = open_learn(journey.window)
    journey.act("Learn opened", lambda: None)
    journey.act("Learn stop 3", lambda: panel.go_to(2))
    journey.act("Show me", panel.show_me)
    journey.qtbot.waitUntil(lambda: panel.tour is None or not panel.tour.busy, timeout=60000)
    journey.act("the stop shown", lambda: None)
    assert journey.window.docks["qkv"].widget().is_shown(), "stop 3 did not show the Q / K / V panel"
