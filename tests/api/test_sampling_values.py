"""explorer.Sampling refuses what no distribution can be drawn with (a NaN, infinite or negative temperature,
top_p outside (0, 1], a negative top_k, a seed no generator takes), in one sentence naming the value, and
every value it accepts gives a proper probability distribution (finite, non-negative, summing to 1)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import explorer
from explorer.core.sampling import distribution
from tests.core.conftest import make_hf_model

REFUSED = [
    ("temperature", math.nan), ("temperature", math.inf), ("temperature", -math.inf), ("temperature", -0.5),
    ("temperature", np.float32("nan")), ("temperature", "0.7"), ("temperature", None), ("temperature", True),
    ("top_p", 0.0), ("top_p", -0.1), ("top_p", 1.5), ("top_p", math.nan), ("top_p", math.inf),
    ("top_k", -1), ("top_k", 2.5), ("top_k", math.nan), ("top_k", "5"),
    ("seed", -1), ("seed", 2**64), ("seed", 1.5), ("seed", math.nan),
]
ACCEPTED = [
    ("temperature", 0.0), ("temperature", 1e-6), ("temperature", 2), ("temperature", 1e6),
    ("temperature", np.float32(0.7)),
    ("top_p", 1e-9), ("top_p", 1.0), ("top_p", 0.5),
    ("top_k", 0), ("top_k", 1), ("top_k", 10**9), ("top_k", np.int64(3)),
    ("seed", 0), ("seed", 2**63 - 1), ("seed", np.uint32(7)),
]


@pytest.mark.parametrize("field, value", REFUSED, ids=[f"{f}={v!r}" for f, v in REFUSED])
def test_a_value_no_distribution_can_be_drawn_with_is_refused_naming_it(field, value):
    with pytest.raises(explorer.ExplorerError) as raised:
        explorer.Sampling(**{field: value})
    message = str(raised.value)
    assert f"{field}=" in message and repr(value)[:20] in message, message
    assert "\n" not in message and message.endswith("."), message


@pytest.mark.parametrize("field, value", ACCEPTED, ids=[f"{f}={v!r}" for f, v in ACCEPTED])
def test_every_accepted_value_gives_a_probability_distribution(field, value):
    sampling = explorer.Sampling(**{"temperature": 0.8, field: value})
    logits = torch.tensor([4.0, 3.0, 2.0, 1.0, 0.0, -30.0])
    probs = distribution(logits, sampling)
    assert np.all(np.isfinite(probs)) and np.all(probs >= 0) and abs(probs.sum() - 1.0) < 1e-12
    assert type(getattr(sampling, field)) in (int, float), "a plain number, so the session file can hold it"


ANY_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**70, 2**70), st.booleans(),
                       st.none(), st.text(max_size=3), st.floats(width=32).map(np.float32),
                       st.integers(-2**63, 2**63 - 1).map(np.int64))


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(temperature=ANY_NUMBER, top_k=ANY_NUMBER, top_p=ANY_NUMBER, seed=ANY_NUMBER)
def test_any_values_either_draw_a_token_from_a_distribution_or_are_refused_in_a_sentence(temperature, top_k,
                                                                                          top_p, seed):
    from explorer.core.sampling import choose

    try:
        sampling = explorer.Sampling(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    except explorer.ExplorerError as error:
        assert str(error).count("\n") == 0 and "is not legal" in str(error)
        return
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    probs = distribution(logits, sampling)
    assert np.all(np.isfinite(probs)) and abs(probs.sum() - 1.0) < 1e-9
    assert 0 <= choose(logits, sampling, position=5) < 4


def test_the_run_takes_only_a_sampling_value():
    model = explorer.Model(_tiny_llama())
    for wrong in ({"temperature": 0.5}, "greedy", 0.5):
        with pytest.raises(explorer.ExplorerError) as raised:
            model.run([1, 2, 3], steps=1, sampling=wrong)
        assert "explorer.Sampling" in str(raised.value) and type(wrong).__name__ in str(raised.value)
    assert len(model.run([1, 2, 3], steps=2, sampling=explorer.Sampling(temperature=0.9, seed=3)).ids) == 5


def _tiny_llama():
    from explorer.core.runtime import from_tensors

    hf_model = make_hf_model("llama")
    return from_tensors(hf_model.config.to_dict(), hf_model.state_dict(), name="tiny-llama")
