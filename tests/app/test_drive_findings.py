"""What a person driving the whole window on a bare X screen saw, fixed, each checked through the real window.

Each test opens the real main window offscreen on the emulated screens of tests/app/conftest.py (`screen`), opens a
model through the real core, and does what the person did. It compares what the window shows with what is true of
the model (its kind from its config.json) or with what the pixels and the font's metrics say, never with a sentence
copied from a panel.
"""
from __future__ import annotations

import json

import pytest

from tests.app.journey import BUNDLED
from tests.app.test_user_journey_drive import journey  # noqa: F401
from tests.app.test_window import store_home  # noqa: F401


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
    said, kind = panel.run_summary.text(), kind_by_config(BUNDLED / name)
    assert ("MLA" in said) == (kind == "mla"), f"{name} ({kind}): {said!r}"
    assert ("encoder–decoder" in said) == (kind == "encoder-decoder"), f"{name} ({kind}): {said!r}"
    assert (panel.variant_box.count() > 0) == (kind == "decoder"), f"{name} ({kind}) offers {panel.variant_box.count()}"
