"""The mask is carried as its rule from the pass (StepContext.mask) to the record, never found again
from the dense mask: a prefill records the rule the pass made its mask by, and only a mask an
intervention edited stays dense. Reference: the masks written here from the positions.
"""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core import recording
from explorer.core.attention_maps import MaskRule
from explorer.core.decode import Decoder
from explorer.core.intervention import Intervention
from explorer.core.recording import RecordOptions
from explorer.core.runtime import from_tensors
from tests.core.conftest import make_hf_model

T, WINDOW = 150, 5                   # tests/core/conftest.py's Gemma 3: sliding window 5, every other layer global


@pytest.fixture(scope="module")
def gemma3():
    hf_model = make_hf_model("gemma3")
    return from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=256), hf_model.state_dict())


def _no_guessing(*_):
    raise AssertionError("the record guessed the rule back from the dense mask")


def test_a_prefill_records_the_rule_the_pass_made_its_mask_by(gemma3, monkeypatch):
    monkeypatch.setattr(recording, "compact", _no_guessing)
    trace = Decoder(gemma3, RecordOptions(), capacity=T + 2).prefill(np.arange(T) % 96)
    positions = np.arange(T)
    causal = positions[None, :] <= positions[:, None]
    for layer in range(2):
        rule = trace.steps[0].layers[layer].attn.mask
        assert isinstance(rule, MaskRule)
        np.testing.assert_array_equal(rule.queries, positions)
        np.testing.assert_array_equal(rule.keys, positions)
    local, full = (trace.steps[0].layers[i].attn.mask for i in range(2))
    assert (local.kind, local.window, full.kind) == ("sliding", WINDOW, "causal")
    np.testing.assert_array_equal(np.asarray(full), causal)
    np.testing.assert_array_equal(np.asarray(local), causal & (positions[None, :] > positions[:, None] - WINDOW))


def test_a_window_longer_than_the_prompt_is_the_causal_rule():
    positions = np.arange(40)
    rule = MaskRule.of(positions, positions, 4096)
    assert rule.kind == "causal" and rule.window is None
    np.testing.assert_array_equal(np.asarray(rule), positions[None, :] <= positions[:, None])
    assert MaskRule.of(positions, positions, 40).kind == "causal"          # i - j <= 39 < W: nothing cut
    cut = MaskRule.of(positions, positions, 39)                             # key 0 leaves query 39's window
    assert cut.kind == "sliding" and not np.asarray(cut)[39, 0] and np.asarray(cut)[39, 1]


def test_a_mask_an_intervention_edited_is_kept_dense(gemma3):
    hide = Intervention()
    for key in (3, 4):
        hide = hide.hide(key, query=120, first_layer=1, last_layer=1)
    trace = Decoder(gemma3, RecordOptions(), capacity=T + 2, intervention=hide).prefill(np.arange(T) % 96)
    mask = trace.steps[0].layers[1].attn.mask
    assert not isinstance(mask, MaskRule)
    positions = np.arange(T)
    expected = positions[None, :] <= positions[:, None]
    expected[120, [3, 4]] = False
    np.testing.assert_array_equal(np.asarray(mask), expected)
