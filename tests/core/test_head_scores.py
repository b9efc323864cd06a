"""Head scores against transformers' own attentions, and the description against its formulas."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core import head_scores
from explorer.core.drivers import make_decoder
from explorer.core.errors import ExplorerError
from explorer.core.head_description import describe_heads

IDS = [5, 17, 42, 3, 88, 61, 29]


def _reference_scores(hf_model, ids: list[int], repeat: int) -> dict[str, np.ndarray]:
    """The issue's definitions, written out over transformers' attentions of s = ids * repeat."""
    s = torch.tensor(ids * repeat)[None]
    with torch.inference_mode():
        attentions = [a[0].double().numpy() for a in hf_model(s, output_attentions=True).attentions]
    n, t = len(ids), len(ids) * repeat
    out = {"previous_token": [], "induction": [], "sink": []}
    for a in attentions:                                                    # (H, T, T)
        out["previous_token"].append([np.mean([a[h, i, i - 1] for i in range(1, t)]) for h in range(len(a))])
        out["induction"].append([np.mean([a[h, i, i - n + 1] for i in range(n, t)]) for h in range(len(a))])
        out["sink"].append([np.mean([a[h, i, 0] for i in range(1, t)]) for h in range(len(a))])
    return {name: np.array(rows) for name, rows in out.items()}


@pytest.mark.parametrize("repeat", [2, 3])
def test_scores_match_transformers_attentions(family, hf_model, loaded, repeat):
    scores = head_scores.score_heads(loaded, IDS, repeat)
    reference = _reference_scores(hf_model, IDS, repeat)
    for name, expected in reference.items():
        got = getattr(scores, name)
        assert got.shape == (loaded.config.n_layers, loaded.config.n_heads)
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0, err_msg=name)
    assert scores.as_json()["induction"] == scores.induction.tolist()


def test_random_ids_are_seeded_distinct_and_not_special():
    a = head_scores.random_ids(100, length=20, seed=3, special=frozenset({0, 1, 2}))
    assert np.array_equal(a, head_scores.random_ids(100, length=20, seed=3, special=frozenset({0, 1, 2})))
    assert not np.array_equal(a, head_scores.random_ids(100, length=20, seed=4, special=frozenset({0, 1, 2})))
    assert len(set(a.tolist())) == 20 and not {0, 1, 2} & set(a.tolist())
    assert a.min() >= 0 and a.max() < 100


def test_a_copying_pattern_scores_one():
    """A hand-made attention that always looks one back (or at the induction target) scores exactly 1."""
    n, t = 4, 12
    previous = np.zeros((1, t, t))
    previous[0, 0, 0] = 1.0
    previous[0, np.arange(1, t), np.arange(t - 1)] = 1.0
    induction = np.zeros((1, t, t))
    induction[0, :n, 0] = 1.0
    induction[0, np.arange(n, t), np.arange(n, t) - n + 1] = 1.0
    assert head_scores.pattern_scores(previous, n)[0][0] == 1.0
    assert head_scores.pattern_scores(previous, n)[2][0] == pytest.approx(1 / (t - 1))    # only row 1 hits 0
    assert head_scores.pattern_scores(induction, n)[1][0] == 1.0


def test_description_follows_its_formulas(loaded):
    decoder = make_decoder(loaded)
    decoder.prefill(np.array(IDS))
    trace = decoder.step() and decoder.step()                               # a prefill, then two decoding rows
    described = describe_heads(trace)
    layer, head = loaded.config.n_layers - 1, 1
    a = trace.attention(layer)[head].astype(np.float64)                     # (T, T)
    t = len(IDS) + 2
    entropy = np.mean([-sum(a[i, j] * np.log(a[i, j]) for j in range(t) if a[i, j] > 0) for i in range(t)])
    distance = np.mean([sum(a[i, j] * (i - j) for j in range(t)) for i in range(t)])
    assert described.entropy[layer, head] == pytest.approx(entropy, abs=1e-5)
    assert described.distance[layer, head] == pytest.approx(distance, abs=1e-5)
    assert described.first_token[layer, head] == pytest.approx(a[:, 0].mean(), abs=1e-6)
    assert described.entropy.shape == (loaded.config.n_layers, loaded.config.n_heads)


@pytest.mark.parametrize("family", ["llama"])
@pytest.mark.parametrize("ids, repeat, message", [([3], 2, "at least 2"), ([1, 2, 3], 1, "at least 2"),
                                                   ([1, 96], 2, "outside the vocabulary")])
def test_bad_requests_are_one_sentence(loaded, ids, repeat, message):
    with pytest.raises(ExplorerError, match=message):
        head_scores.score_heads(loaded, ids, repeat)


def test_a_cancel_stops_the_scoring_run_after_the_layer_it_was_asked_in(monkeypatch):
    """The atlas's scoring runs the model on the repeated ids; a cancel (a quit, a new model) waited for the
    whole run (drive31: quits of 6-8 s mid-atlas). Expectation: the run stops after the layer in which the
    cancel was set, so the layers after it never run."""
    from explorer.core import model as model_module
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama")
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")
    assert loaded.config.n_layers >= 2
    ran = []
    forward = model_module.Block.forward

    def counted(self, *args, **kwargs):
        ran.append(self.layer)
        return forward(self, *args, **kwargs)
    monkeypatch.setattr(model_module.Block, "forward", counted)
    with pytest.raises(head_scores.ScoringCancelled):
        head_scores.score_heads(loaded, IDS, 2, cancel=lambda: bool(ran))     # asked while the first layer runs
    assert ran == [0], f"layers run after the cancel: {ran[1:]}"
