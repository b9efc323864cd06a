"""Activation patching follows the model open (drive 19, S1 and M6), checked through the real main window.

S1: after an encoder (MiniLM) or an encoder–decoder (the translator), a decoder's patching tab named the model
before ("… needs a decoder: minilm-l6 is an encoder …") beside an enabled Run map; and on an encoder that sentence
stood twice, left and right. Expectation: no text in the tab names a model other than the one open (its name read
from the session's model, never from the panel), and an unfit model's reason stands once.

M6: the default example's clean and corrupted prompts had 15 and 14 tokens on every bundled Shakespeare model, and
the panel said only "The patching map failed.". Expectation: under the tokenizer of every bundled and test
decoder, the default prompts have the same number of tokens and the target and the token against it are one token
each; Run map with the defaults draws a map; a map that fails says why in the tab itself, in one bounded sentence
that holds the token counts the model's tokenizer gives (whole in its tooltip).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSize
from PySide6.QtWidgets import QWidget

from explorer.app.widgets import patching_view
from tests.app.journey import BUNDLED, _text_of, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder

SHAKESPEARE = sorted(path for path in BUNDLED.glob("shakespeare-*") if (path / "config.json").is_file())
SCREEN = QSize(1366, 768)
LONGEST_SENTENCE = 400            # characters: a one-sentence state, never a text that sizes the tab


@pytest.fixture(scope="module")
def pulled():
    """The pulled test models by name (found before a test's own empty store replaces the run's)."""
    from explorer.core import store

    return {name: store.pulled_path(name) for name in ("minilm-l6", "smollm2-135m", "gemma3-270m")}


def texts_in_sight(widget: QWidget) -> list[str]:
    """Every text a person sees in `widget` (labels, buttons, captions), each once per widget showing it."""
    return [text for child in widget.findChildren(QWidget) if child.isVisible() and (text := _text_of(child))]


def patching_tab(journey):
    panel = journey.raise_panel("experiments")
    journey.act("the Activation patching tab", lambda: panel.tabs.setCurrentWidget(panel.patching))
    return panel.patching


def test_the_patching_tab_names_only_the_model_open(qtbot, tmp_path, monkeypatch, pulled):
    if pulled["minilm-l6"] is None:
        pytest.fail("minilm-l6 is not pulled: `make test` pulls it")
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREEN) as journey:
        journey.open(SHAKESPEARE[0], "To be, or not to be")
        view = patching_tab(journey)
        panel = journey.window.docks["experiments"].widget()
        for unfit, decoder in ((pulled["minilm-l6"], SHAKESPEARE[-1]), (BUNDLED / "translate-en-zh", SHAKESPEARE[0])):
            journey.open(unfit, "The capital of France is Paris.")
            name = journey.window.session.model.name
            said = [text for text in texts_in_sight(panel) if name in text]
            assert len(said) == 1, f"{name}'s patching tab says why it cannot patch {len(said)} times: {said}"
            assert not view.run_button.isEnabled()
            journey.open(decoder, "To be, or not to be")
            stale = [text for text in texts_in_sight(panel) if name in text]
            assert not stale, f"{decoder.name}'s patching tab still names {name}: {stale}"
            assert view.run_button.isEnabled()
            journey.type_and_run(" Again")
            assert not [text for text in texts_in_sight(panel) if name in text]


def decoder_tokenizers(pulled) -> dict[str, object]:
    """The tokenizer of every bundled and pulled test decoder, as the app loads it."""
    from explorer.core.loaders import gguf
    from explorer.core.loaders.gguf_tokenizer import tokenizer_from_gguf
    from explorer.core.loaders.hf import read_tokenizer

    tokenizers = {path.name: read_tokenizer(path, {}) for path in SHAKESPEARE}
    for name in ("smollm2-135m", "gemma3-270m"):
        folder = pulled[name]
        if folder is None:
            pytest.fail(f"{name} is not pulled: `make test` pulls it")
        weights = Path(folder) if Path(folder).is_file() else next(Path(folder).glob("*.gguf"))
        tokenizers[name] = tokenizer_from_gguf(gguf._tokenizer_metadata(weights), str(weights))
    return tokenizers


def test_the_default_example_fits_every_bundled_and_test_decoder(pulled):
    view = patching_view
    for name, tokenizer in decoder_tokenizers(pulled).items():
        def plain(text):
            return [i for i in tokenizer.encode(text).ids if not tokenizer.is_special(int(i))]
        clean, corrupt = plain(view.CLEAN), plain(view.CORRUPT)
        assert len(clean) == len(corrupt), f"{name}: the default prompts have {len(clean)} and {len(corrupt)} tokens"
        for answer in (view.TARGET, view.AGAINST):
            assert len(plain(answer)) == 1, f"{name}: {answer!r} is {len(plain(answer))} tokens"
        assert plain(view.TARGET) != plain(view.AGAINST)


@pytest.mark.parametrize("folder", SHAKESPEARE, ids=[path.name for path in SHAKESPEARE])
def test_run_map_with_the_defaults_draws_a_map(qtbot, tmp_path, monkeypatch, folder):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREEN) as journey:
        journey.open(folder, "To be, or not to be")
        view = patching_tab(journey)
        journey.act("Run map with the default example", view.run_button.click)
        model = journey.window.session.model
        assert view.result is not None, f"{folder.name}: no map; the tab says {texts_in_sight(view)}"
        assert view.result.values.shape == (model.n_layers, model.n_heads)


def test_a_failed_map_says_why_in_the_tab(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, SCREEN) as journey:
        journey.open(SHAKESPEARE[0], "To be, or not to be")
        view = patching_tab(journey)
        tokenizer = journey.window.controller.summary.tokenizer
        clean, corrupt = "The Eiffel Tower is located in the city of", "The Colosseum is located in the city of"
        counts = [len(tokenizer.encode(text).ids) for text in (clean, corrupt)]
        assert counts[0] != counts[1], counts                  # the drive's pair: unequal on this tokenizer
        view.clean.setText(clean)
        view.corrupt.setText(corrupt)
        journey.act("Run map with prompts of unequal lengths", view.run_button.click)
        assert view.result is None
        said = [text for text in texts_in_sight(view) if "fail" in text]
        assert len(said) == 1, f"the tab says {texts_in_sight(view)}"
        assert all(str(count) in said[0] for count in counts), f"{said[0]!r} gives no token counts {counts}"
        assert len(said[0]) <= LONGEST_SENTENCE
        assert view.empty.toolTip() and all(str(count) in view.empty.toolTip() for count in counts)
        panel = journey.window.docks["experiments"].widget()
        unsaid = [text for text in texts_in_sight(panel) if "press Run map" in text]
        assert not unsaid, f"beside the failure, the panel says there is simply no map yet: {unsaid}"

        view.corrupt.setText(clean)
        view.target.setText(" Paris" * 200)                       # a long reason: bounded, whole in the tooltip
        journey.act("Run map with a very long target", view.run_button.click)
        said = [text for text in texts_in_sight(view) if "fail" in text]
        assert len(said) == 1 and len(said[0]) <= LONGEST_SENTENCE, said
        assert view.empty.toolTip().count("Paris") == 200
