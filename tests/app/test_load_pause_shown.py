"""A load whose next call holds every thread a while (the tokenizers library building Gemma 3's 513,511 merges
holds Python's lock 2.2 s) says so first, as a Pause, and the window shows it before the call starts: the Loading
dialog opens at once with its words, instead of the window freezing with no dialog (it opens only after its
minimum duration, and the pause came before it: drive29 measured 2.1-2.4 s of a frozen window)."""
from __future__ import annotations

import time

from explorer.app.thread.worker import ModelWorker
from explorer.core.loaders.load_progress import Pause
from tests.app.fake_core import FakeCore
from tests.app.shared_window import make_window
from tests.app.window_helpers import idle

WORDS = "building a large tokenizer (the window waits a moment)"   # any words: the test's own


def test_the_loading_dialog_shows_a_pause_before_it_starts(qtbot, tmp_path):
    core, seen = FakeCore(), {}
    real_load = core.load_model

    def load_model(path, device="cpu", dtype="float32", progress=None):
        progress(0.05, Pause(WORDS))                       # returns once the window has shown it
        dialog = window.progress                           # read on the model thread, the window idle meanwhile
        seen.update(shown=dialog is not None and dialog.isVisible(),
                    words=dialog.labelText() if dialog is not None else None)
        time.sleep(0.3)                                    # the call that holds the window
        return real_load(path, device, dtype, progress)
    core.load_model = load_model
    window = make_window(qtbot, tmp_path, worker=ModelWorker(core.api()))
    window.open_model("model-a")
    idle(qtbot, window, lambda: window.controller.summary is not None)
    assert seen["shown"] and " ".join(seen["words"].split()) == WORDS, seen     # wrapped to the dialog's width
