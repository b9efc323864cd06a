"""A Cancel (or File ▸ Close Model) pressed in the milliseconds after the model thread has switched models, but
before the window heard of it, wins: the model asked for is never taken as loaded, and the window, every panel
and the model thread agree on what is open (here: no model, as the one before was let go by the switch).

Before, the window said "Loading cancelled; the previous model is still in use", then took the new model when
its news arrived; after Close Model it named a model the model thread had already let go."""
from __future__ import annotations

import time

import transformers  # noqa: F401  (the tiny models are written with it; missing, the run fails, never skips)

from explorer.app.state.session import NO_MODEL
from explorer.app.thread.worker import ModelWorker
from tests.app.shared_window import make_window
from tests.app.test_close_model import every_panel, shown_states
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, opened

CHOSEN_LAYERS = 3                               # the previous model has 2: the two are told apart by it


def switched_on_the_model_thread(window, reference: str, timeout_s: float = 60.0) -> None:
    """Wait, without letting the window handle any event, until the model thread holds `reference`'s model:
    the news of it is then queued to the window, not yet read."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        request = window.worker._loop._state.load_request
        if request is not None and request.path == reference:
            return
        time.sleep(0.001)
    raise AssertionError("the model thread never switched models")


def models_named(qtbot, window) -> dict:
    """What each part of the window takes to be open: the controller, the session, the chrome, the thread."""
    loaded = window.worker._loop._state.loaded
    return {"controller": window.controller.reference,
            "session layers": window.session.model.n_layers if window.session.model is not None else None,
            "thread layers": loaded.info.n_layers if loaded is not None else None,
            "status": window.status.fields["model"].text(),
            "picker": window.model_bar.models.currentData()}


def assert_no_model_anywhere(qtbot, window) -> None:
    named = models_named(qtbot, window)
    assert named["controller"] is None and named["session layers"] is None, named
    assert named["thread layers"] is None, named            # the switched-to model was let go, too
    assert named["status"] == "no model", named
    kept = {name: state for name, state in shown_states(qtbot, window).items()
            if name != "learn" and (state[0] != "empty" or not state[1].startswith(NO_MODEL.split(":")[0]))}
    assert not kept, f"panels that do not say there is no model: {kept}"
    off = [name for name in ("run", "step", "back", "play") if getattr(window.actions, name).isEnabled()]
    assert not off, f"presses on with no model: {off}"


def window_with_previous(qtbot, tmp_path):
    previous = make_tiny_llama(tmp_path / "previous")
    chosen = make_tiny_llama(tmp_path / "chosen", seed=1, n_layers=CHOSEN_LAYERS)
    window = make_window(qtbot, tmp_path, worker=ModelWorker())
    opened(qtbot, window, previous)
    every_panel(qtbot, window)
    return window, str(previous), str(chosen)


def test_a_cancel_just_after_the_switch_wins(qtbot, tmp_path, dialogs):
    window, previous, chosen = window_with_previous(qtbot, tmp_path)
    taken = []
    window.controller.model_ready.connect(lambda summary: taken.append(summary.reference))
    window.open_model(chosen)
    switched_on_the_model_thread(window, chosen)
    window.controller.stop()                                # Escape, or the Loading dialog's Cancel
    idle(qtbot, window)
    qtbot.wait(300)                                         # nothing the model thread sent is on its way
    assert taken == [], "the cancelled load was taken as the model in use"
    assert_no_model_anywhere(qtbot, window)
    assert "no model is open" in window.status.currentMessage()

    opened(qtbot, window, previous)                         # opening a model works as before
    assert models_named(qtbot, window)["thread layers"] == 2 and window.session.trace is not None
    window.close()


def test_close_model_just_after_the_switch_names_no_model(qtbot, tmp_path, dialogs):
    window, previous, chosen = window_with_previous(qtbot, tmp_path)
    window.open_model(chosen)
    switched_on_the_model_thread(window, chosen)
    window.menus.close_model_action.trigger()
    idle(qtbot, window)
    qtbot.wait(300)
    assert_no_model_anywhere(qtbot, window)
    window.close()


def test_another_model_chosen_just_after_the_switch_is_the_one_open(qtbot, tmp_path, dialogs):
    window, previous, chosen = window_with_previous(qtbot, tmp_path)
    window.open_model(chosen)
    switched_on_the_model_thread(window, chosen)
    window.open_model(previous)                             # the person chose again: the newer load decides
    idle(qtbot, window, lambda: window.session.trace is not None)
    named = models_named(qtbot, window)
    assert named["controller"] == previous and named["session layers"] == named["thread layers"] == 2, named
    window.close()


def test_a_cancel_of_the_next_load_after_a_late_switch_names_no_model(qtbot, tmp_path, dialogs):
    """The chosen model landed after another was asked (its switch let the previous one go); that other load is
    then cancelled before it switches: the previous model is not on the model thread any more, so none is open."""
    window, previous, chosen = window_with_previous(qtbot, tmp_path)
    third = str(make_tiny_llama(tmp_path / "third", seed=2))
    window.open_model(chosen)
    switched_on_the_model_thread(window, chosen)
    window.open_model(third)
    window.controller.cancel_load()                         # before the third has switched (it is still queued)
    idle(qtbot, window)
    qtbot.wait(300)
    assert_no_model_anywhere(qtbot, window)
    window.close()


def test_reset_while_a_model_loads_ends_the_load_it_cancels(qtbot, tmp_path, dialogs):
    """Reset (Ctrl+R) cancels everything queued, a load included: the window stops waiting for that load (before,
    its Loading dialog stayed up and every press waited for a model that would never come)."""
    window, previous, chosen = window_with_previous(qtbot, tmp_path)
    window.open_model(chosen)
    window.actions.reset.trigger()
    qtbot.waitUntil(lambda: window.controller.loading is None, timeout=10000)
    idle(qtbot, window)
    qtbot.wait(300)
    named = models_named(qtbot, window)
    agreed = (named["controller"], named["session layers"], named["thread layers"])
    assert agreed in ((previous, 2, 2), (None, None, None)), named     # the model before, or none: never chosen
    assert window.progress is None
    window.close()
