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


def _every_mask_carries_its_rule(monkeypatch):
    """Fail the test where a recorded pass hands a long mask to the record without its rule: the record
    would then keep the dense array (recording.MaskCompactor keeps what it is given, it guesses nothing)."""
    keep = recording.MaskCompactor.__call__

    def carried(self, mask, kv_positions, rule=None):
        if mask.size > recording.SMALL and rule is None:
            raise AssertionError(f"a {mask.shape} mask reached the record without its rule")
        return keep(self, mask, kv_positions, rule)

    monkeypatch.setattr(recording.MaskCompactor, "__call__", carried)


def test_a_prefill_records_the_rule_the_pass_made_its_mask_by(gemma3, monkeypatch):
    _every_mask_carries_its_rule(monkeypatch)
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


# ----- the encoder, cross-attention and the encoder-decoder's decoder carry their rule too ---------------
LONG = 150                       # 150 x 150 masks: past recording.SMALL, where a record keeps a rule, not the array


def test_the_encoder_records_the_full_rule_and_its_maps_equal_transformers(monkeypatch):
    import torch

    from tests.core import test_encoder

    _every_mask_carries_its_rule(monkeypatch)
    monkeypatch.setattr(test_encoder, "TINY", dict(test_encoder.TINY, max_position_embeddings=LONG + 10))
    hf_model = test_encoder.tiny_bert()                                 # its positions now reach LONG
    ids = np.random.default_rng(1).integers(0, hf_model.config.vocab_size, size=LONG)
    trace = test_encoder.runner_for(hf_model).prefill(ids)
    with torch.no_grad():
        reference = hf_model(torch.as_tensor(ids)[None], output_attentions=True).attentions
    positions = np.arange(LONG)
    for layer, expected in enumerate(reference):
        rule = trace.steps[0].layers[layer].attn.mask
        assert isinstance(rule, MaskRule) and rule.kind == "full"
        np.testing.assert_array_equal(rule.queries, positions)
        np.testing.assert_array_equal(rule.keys, positions)
        assert np.asarray(rule).all() and rule.shape == (LONG, LONG)
        np.testing.assert_allclose(trace.attention(layer), expected[0].numpy(), atol=1e-5, rtol=0)


def _long_encdec():
    import torch

    from explorer.core.encdec import EncDecConfig, EncoderDecoder, model_info
    from explorer.core.runtime import LoadedModel

    config = EncDecConfig(vocab_size=40, d_model=32, n_heads=4, d_ff=48, n_encoder_layers=2, n_decoder_layers=2,
                          max_positions=LONG + 10)
    torch.manual_seed(0)
    model = EncoderDecoder(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" not in name:
                parameter.normal_(0.0, 0.3)
    model.eval().requires_grad_(False)
    return LoadedModel(model=model, config=config, tokenizer=None, info=model_info(model, config, "long"), name="long")


def test_the_encdec_encoder_records_the_full_rule(monkeypatch):
    from explorer.core.encdec_decode import EncDecDecoder

    _every_mask_carries_its_rule(monkeypatch)
    source = np.random.default_rng(2).integers(3, 40, size=LONG)
    trace = EncDecDecoder(_long_encdec()).prefill(source)
    for layer in trace.encoder.layers:
        assert isinstance(layer.attn.mask, MaskRule) and layer.attn.mask.kind == "full"
        np.testing.assert_array_equal(layer.attn.mask.keys, np.arange(LONG))
        assert np.asarray(layer.attn.mask).all()


def test_the_encdec_decoder_records_the_causal_and_the_cross_rule(monkeypatch):
    """Teacher forcing T target tokens over S source tokens: self-attention by the causal rule over the
    target positions, cross-attention by the full rule over the source; records keep both rules."""
    import torch

    from explorer.core.capture import StepCapture
    from explorer.core.encdec import TargetStep
    from explorer.core.recording import MaskCompactor, attention_record, attention_tensors, to_numpy

    _every_mask_carries_its_rule(monkeypatch)
    loaded = _long_encdec()
    rng = np.random.default_rng(3)
    source, target = rng.integers(3, 40, size=LONG), rng.integers(3, 40, size=LONG)
    capture = StepCapture(2)
    with torch.no_grad():
        memory = loaded.model.encode(torch.as_tensor(source)[None])
        loaded.model.decode(torch.as_tensor(target)[None], TargetStep(np.arange(LONG), None),
                            loaded.model.cross_keys_values(memory), None, capture)
    positions = np.arange(LONG)
    causal = positions[None, :] <= positions[:, None]
    masks = MaskCompactor()
    for layer in capture.layers:
        for captured, kind, expected in ((layer.attn, "causal", causal), (layer.cross, "full", np.ones_like(causal))):
            record = attention_record(captured, to_numpy([attention_tensors(captured)], torch.float32)[0], masks)
            assert isinstance(record.mask, MaskRule) and record.mask.kind == kind
            np.testing.assert_array_equal(record.mask.queries, positions)
            np.testing.assert_array_equal(np.asarray(record.mask), expected)
            visible = captured.weights.numpy() > 0                           # (H, T, n_kv): what the softmax saw
            assert not (visible & ~expected).any() and visible.any(axis=-1).all()


def test_a_mask_that_lost_its_rule_is_caught_and_kept_dense(monkeypatch):
    """The check above bites: the same capture with its rule dropped is refused under it, and without it
    the record keeps the dense array, not a MaskRule found again."""
    from dataclasses import replace

    import torch

    from explorer.core.capture import StepCapture
    from explorer.core.recording import attention_record, attention_tensors, to_numpy

    loaded = _long_encdec()
    capture = StepCapture(2)
    with torch.no_grad():
        loaded.model.encode(torch.as_tensor(np.random.default_rng(4).integers(3, 40, size=LONG))[None], capture=capture)
    lost = replace(capture.layers[0].attn, rule=None)
    arrays = to_numpy([attention_tensors(lost)], torch.float32)[0]
    record = attention_record(lost, arrays)
    assert not isinstance(record.mask, MaskRule) and np.asarray(record.mask).all()
    _every_mask_carries_its_rule(monkeypatch)
    with pytest.raises(AssertionError, match="without its rule"):
        attention_record(lost, arrays)
