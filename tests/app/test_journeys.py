"""Journeys: the real main window on emulated 1366x768 and 1920x1080 screens (no window manager), driven
through every kind of model one after the other, with the checks of tests/app/journey.py after every action.

Each kind (a GQA decoder, the bundled MLA model, a sliding-window Gemma, an encoder, the bundled
encoder-decoder) is opened in the same window, then run after typing, stepped, stepped back and
branched; every panel of the registry is raised with each of its tabs; every job is started from its
own button: what-if for every offered target, the patching map, the head atlas, attribution (of another
token too), a cell of the attention map clicked to be derived, the residual stream, the logit lens; a
conversion and a run are cancelled; and a panel is exported from the window's menu and read back.
Then the next kind. At the end, View ▸ Reset Layout and a bad file, which must say what is wrong in
one dialog and leave the layout whole.

SmolLM2 (a real GQA model, slow on two cores) takes the GQA part of the 1920x1080 journey only, and the real
Gemma 3 270M (a sliding window on five layers in six) the sliding part of the 1366x768 one only; each other
screen has the bundled GQA twin and a tiny random Gemma, so neither real model is run twice. MiniLM is the
encoder. Where they are not pulled, the bundled GQA twin, the tiny Gemma and a tiny random BERT stand in, except under
`make test`, which names the models it pulled (TRANSFORMER_EXPLORER_REQUIRED_MODELS): there a missing
one fails.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import transformers  # noqa: E402,F401  (the tiny models are written with it; missing, the run fails, never skips)
from PySide6.QtWidgets import QMessageBox

from explorer.app.window.main_window import MainWindow
from explorer.core import store
from tests.app.journey import BUNDLED, Journey, make_tiny_gemma, registered_panels
from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.test_encdec_app import make_tiny_bert
from tests.app.window_helpers import new_window

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("store_home")]   # the store in the test's folder
KINDS = os.environ.get("JOURNEY_KINDS", "gqa mla sliding encoder encdec").split()    # a subset to debug one
PROMPTS = {"gqa": "To be, or not to be, that is", "mla": "To be, or not to be, that is",
           "sliding": "To be, or not to be, that is the question", "encoder": "The capital of France is Paris.",
           "encdec": "To be, or not to be"}
REAL_GQA_ON = "1920x1080"           # SmolLM2 is the GQA model of this journey only
REAL_SLIDING_ON = "1366x768"        # Gemma 3 270M is the sliding-window model of this journey only


def pulled(name: str) -> Path | None:
    """A model pulled into the test store; under `make test` a missing one fails, never skips."""
    folder = store.pulled_path(name)
    if folder is None and name in os.environ.get("TRANSFORMER_EXPLORER_REQUIRED_MODELS", "").split():
        pytest.fail(f"{name} is required under make test but not pulled")
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("journey-models")
    return {"gqa": BUNDLED / "shakespeare-gqa", "mla": BUNDLED / "shakespeare-mla",
            "sliding": make_tiny_gemma(root / "tiny-gemma3"),
            "encoder": pulled("minilm-l6") or make_tiny_bert(root / "tiny-bert"),
            "encdec": BUNDLED / "translate-en-zh",
            "real gqa": pulled("smollm2-135m") or BUNDLED / "shakespeare-gqa",    # before a test's empty store
            "real sliding": pulled("gemma3-270m") or root / "tiny-gemma3"}     # the tiny one made above


def walk(journey: Journey, folder: Path, kind: str, patch, targets: int | None = None) -> None:
    """One kind's part of the journey, in the order a person exploring it would go; `targets`: the what-if
    targets converted to (None: every one offered)."""
    journey.open(folder, PROMPTS[kind])
    journey.type_and_run(" and")
    journey.step_back_branch()
    journey.raise_every_panel()
    journey.what_if_every_target(targets)
    journey.patching()
    journey.cancels()
    journey.why_panels()
    journey.derive_a_cell()
    journey.logit_lens()
    journey.export_from_menu(patch)


@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_a_journey_through_every_kind_of_model(qtbot, tmp_path, monkeypatch, models, screen):
    size = SCREENS[screen]
    chosen = dict(models)
    if screen == REAL_GQA_ON:
        chosen["gqa"] = models["real gqa"]
    targets = {}
    if screen == REAL_SLIDING_ON and models["real sliding"] != models["sliding"]:
        chosen["sliding"] = models["real sliding"]
        targets["sliding"] = 1         # every target is converted to on the tiny Gemma of the other screen
    (tmp_path / "exports").mkdir()
    with emulated_screen(size):
        window = new_window(qtbot, tmp_path)
        journey = Journey(qtbot, window, size, tmp_path / "exports")
        monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: journey.warnings.append(text))
        monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
        assert set(registered_panels()) <= set(window.docks), "a registered panel has no dock"
        started = time.monotonic()
        try:
            for kind in KINDS:
                walk(journey, chosen[kind], kind, monkeypatch, targets.get(kind))
            journey.act("View ▸ Reset Layout", window.default_layout)
            bad = tmp_path / "bad.gguf"
            bad.write_bytes(b"not a model\n" * 100)
            journey.act("opening a bad file", lambda: window.open_model(str(bad)), errors=("bad.gguf",))
            assert any("bad.gguf" in text for text in journey.warnings), "the bad file was refused without a word"
            assert window.session.trace is not None, "the model before the bad file was lost"
            journey.raise_every_panel()
        finally:
            window.close()
        slowest = sorted(journey.log, key=lambda entry: -entry[1])[:5]
        print(f"\njourney {screen}: {len(journey.log)} actions in {time.monotonic() - started:.1f} s; "
              f"slowest {[(what, round(s, 1)) for what, s in slowest]}")
        assert isinstance(window, MainWindow) and len(journey.exports) == len(KINDS)
