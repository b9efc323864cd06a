"""A batch of an encoder-decoder's runs: the sources' encoder passes are one right-padded pass (padding keys
hidden), each run then decoding its own steps; each run equals its source's run alone and torch's own
Transformer layers (nn.TransformerEncoderLayer / DecoderLayer) on the same weights."""
from __future__ import annotations

import numpy as np
import pytest

import explorer
from explorer.core import encdec_decode
from tests.core.test_encdec import BUNDLED
from tests.core.test_encdec_reference import random_model, reference

SOURCES = [[3, 17, 8, 22, 5, 9, 30], [12, 4], [7, 7, 21, 33, 2, 19, 25, 11, 36, 14, 6], [31, 1, 28]]


def close(got: np.ndarray, expected: np.ndarray, rtol: float = 1e-4) -> bool:
    """Equal to float32's rounding through a few layers: a padded batch sums in another order than one source alone
    (2e-5 apart with one torch thread); a padding that leaks into attention is 1e-1 apart."""
    assert got.shape == expected.shape, (got.shape, expected.shape)
    return float(np.abs(got - expected).max()) <= rtol * max(float(np.abs(expected).max()), 1.0)


@pytest.fixture
def padded_passes(monkeypatch) -> list[int]:
    """The number of sources in each padded encoder pass a batch takes."""
    seen: list[int] = []
    original = encdec_decode.prefill_padded

    def counting(decoders, prompts):
        seen.append(len(prompts))
        return original(decoders, prompts)

    monkeypatch.setattr(encdec_decode, "prefill_padded", counting)
    return seen


def assert_same_run(run, alone) -> None:
    """The encoder record, the target ids, logits and every map equal those of the source's run alone."""
    assert run.ids.tolist() == alone.ids.tolist()
    assert run.trace.encoder.token_ids.tolist() == alone.trace.encoder.token_ids.tolist()
    assert close(run.logits, alone.logits)
    info = run.trace.model
    for layer in range(len(alone.trace.encoder.layers)):
        ours, theirs = run.trace.encoder.layers[layer], alone.trace.encoder.layers[layer]
        for name in ("q", "k", "v", "weights"):
            assert close(getattr(ours.attn, name), getattr(theirs.attn, name)), (layer, name)
        np.testing.assert_array_equal(ours.attn.mask, theirs.attn.mask)
        assert close(ours.residual_norm, theirs.residual_norm)
    for layer in range(info.n_layers):
        for head in range(info.n_heads):
            for kind in ("self", "cross"):
                assert close(run.attention(layer, head, kind=kind), alone.attention(layer, head, kind=kind))


@pytest.mark.parametrize("seed", [3, 4])
def test_an_encdec_batch_encodes_in_one_padded_pass_and_each_run_equals_its_run_alone(seed, padded_passes):
    model = explorer.Model(random_model(seed))
    seen = []
    runs = model.run(SOURCES, steps=3, progress=lambda done, total: seen.append((done, total)))
    assert padded_passes == [len(SOURCES)] and seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for source, run in zip(SOURCES, runs):
        assert_same_run(run, model.run(source, steps=3))


def test_each_run_of_an_encdec_batch_equals_torch_transformer_layers():
    loaded = random_model(5)
    for source, run in zip(SOURCES, explorer.Model(loaded).run(SOURCES, steps=4)):
        expected_logits, maps = reference(loaded.model, np.array(source), run.ids)
        assert close(run.logits, expected_logits, rtol=1e-4)
        for layer, expected in enumerate(maps["encoder"]):
            assert close(run.trace.encoder.layers[layer].attn.weights, expected, rtol=1e-4)
        for layer, expected in enumerate(maps["cross"]):
            assert close(run.trace.attention(layer, cross=True), expected, rtol=1e-4)


def test_an_intervened_encdec_batch_encodes_in_one_padded_pass_equal_to_each_source_alone(padded_passes):
    from tests.api.test_encoder_batches import every_kind

    model = explorer.Model(random_model(6))
    ablated = every_kind(model.info, max(len(s) for s in SOURCES), where="encoder").ablate(0, 1)
    runs = model.run(SOURCES, steps=2, intervention=ablated)
    assert padded_passes == [len(SOURCES)]
    for source, run in zip(SOURCES, runs):
        assert_same_run(run, model.run(source, steps=2, intervention=ablated))


def test_the_bundled_translator_batch_equals_its_runs_alone(padded_passes):
    model = explorer.load(BUNDLED)
    texts = ["March 5, 2024", "the year is 1999 and it is a long sentence to translate", "2024年3月5日"]
    runs = model.run(texts, steps=4)
    assert padded_passes == [3]
    for text, run in zip(texts, runs):
        assert_same_run(run, model.run(text, steps=4))
