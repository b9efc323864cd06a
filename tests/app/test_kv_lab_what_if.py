"""KV lab ▸ What-if in a real window: it says why only what the model is (MLA, encoder–decoder, or a decoder
offered targets, read from the model's config.json), and a cancelled conversion leaves no progress words and no
blank maps after a model switch."""
from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window, make_tiny_gemma, walk_on_screen

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.fixture
def journey(qtbot, tmp_path, screen, dialogs):
    """A person's journey (tests/app/journey.py) through a new main window sized to the emulated `screen`."""
    yield from walk_on_screen(qtbot, tmp_path, screen, dialogs)


def kind_by_config(folder) -> str:
    """"mla", "encoder-decoder" or "decoder", read from the folder's config.json alone."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("kv_lora_rank"):
        return "mla"
    if config.get("is_encoder_decoder") or any("EncoderDecoder" in name for name in config.get("architectures", ())):
        return "encoder-decoder"
    return "decoder"


@pytest.mark.parametrize("name", ["shakespeare-gqa", "shakespeare-mla", "translate-en-zh"])
def test_the_what_if_tab_says_why_only_what_the_model_is(journey, name):
    """KV lab ▸ What-if: a model trained with MLA, or an encoder-decoder, is told apart by its own sentence; a
    decoder with per-head keys is offered targets and is called neither (the GQA model was called an
    encoder-decoder by a sentence set before its targets arrived)."""
    journey.open(BUNDLED / name, "To be, or not to be")
    panel = journey.raise_panel("kv_lab")
    journey.act("the what-if tab", lambda: panel.tabs.setCurrentIndex(1))
    said, kind = panel.targets_note.text(), kind_by_config(BUNDLED / name)
    assert ("MLA" in said) == (kind == "mla"), f"{name} ({kind}): {said!r}"
    assert ("encoder–decoder" in said) == (kind == "encoder-decoder"), f"{name} ({kind}): {said!r}"
    assert (panel.variant_box.count() > 0) == (kind == "decoder"), f"{name} ({kind}) offers {panel.variant_box.count()}"


def test_a_cancelled_what_if_leaves_no_progress_words_and_no_blank_maps_after_a_model_switch(qtbot, tmp_path,
                                                                                            monkeypatch):
    """KV lab ▸ What-if on the bundled GQA model, cancelled mid-way, then the MLA model opened: the bar said
    "0% factorising K/V (SVD)" for a model that cannot be converted, above two blank map frames."""

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
        lab = journey.raise_panel("kv_lab")
        journey.act("the what-if tab", lambda: lab.tabs.setCurrentIndex(1))
        assert not lab.what_if.maps.isVisibleTo(lab), "blank map frames before any conversion"
        lab.steps_box.setValue(lab.steps_box.maximum())          # long enough to be cancelled on its way
        lab.run_button.click()
        qtbot.waitUntil(lambda: lab.progress.format().startswith("%p% ") and "starting" not in lab.progress.format(),
                        timeout=60000)
        step_words = lab.progress.format()[4:]
        journey.act("cancelling the conversion", lab.cancel_button.click)
        assert step_words not in lab.progress.text(), f"the cancelled run's step stays: {lab.progress.text()!r}"
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be, that is")
        journey.raise_panel("kv_lab")
        assert lab.progress.text().strip("0% ") == "", f"the MLA model's bar reads {lab.progress.text()!r}"
        assert not lab.what_if.maps.isVisibleTo(lab), "two blank map frames under 'trained with MLA'"


def test_the_no_mla_note_stays_beside_a_result_and_a_cancellation(qtbot, tmp_path, monkeypatch):
    """A sliding-window Gemma lists MLA rows and offers none, and says why: that note wrote over each conversion's
    result sentence and over "No result …: cancelled", so a run said nothing of its own (drive27). Both show now."""
    gemma = make_tiny_gemma(tmp_path / "tiny-gemma3")
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(gemma, "To be, or not to be, that is")
        lab = journey.raise_panel("kv_lab")
        journey.act("the what-if tab", lambda: lab.tabs.setCurrentIndex(1))
        note = lab.targets_note.text()
        assert note.startswith("No MLA target") and lab.targets_note.isVisibleTo(lab), note
        variant = lab.variant_box.itemText(0)
        lab.steps_box.setValue(2)
        journey.act(f"what-if {variant}", lab.run_button.click)
        qtbot.waitUntil(lambda: lab.result is not None, timeout=120_000)
        assert lab.run_summary.text().startswith(f"{variant}: mean KL"), lab.run_summary.text()
        assert lab.targets_note.text() == note and lab.targets_note.isVisibleTo(lab)
        lab.steps_box.setValue(lab.steps_box.maximum())
        lab.run_button.click()
        qtbot.waitUntil(lambda: lab.cancel_button.isEnabled(), timeout=60_000)
        lab.cancel_button.click()
        qtbot.waitUntil(lambda: "was cancelled" in lab.run_summary.text(), timeout=120_000)
        assert lab.targets_note.text() == note and lab.targets_note.isVisibleTo(lab)
