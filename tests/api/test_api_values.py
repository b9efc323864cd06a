"""Values of the wrong type or range given to Model.run and Run.attention are refused in one sentence that
names the value (never a TypeError from deep inside, never silently rounded: int(0.5) would ablate layer 0)."""
from __future__ import annotations

import numpy as np
import pytest

import explorer
from tests.core.conftest import make_hf_model


@pytest.fixture(scope="module")
def model():
    from explorer.core.runtime import from_tensors

    hf_model = make_hf_model("llama")
    return explorer.Model(from_tensors(hf_model.config.to_dict(), hf_model.state_dict(), name="tiny-llama"))


def _refusal(call) -> str:
    with pytest.raises(explorer.ExplorerError) as raised:
        call()
    message = str(raised.value)
    assert message and "\n" not in message, message
    return message


@pytest.mark.parametrize("prompt, says", [
    ([1, 2**70], "token id 1180591620717411303424, far outside any vocabulary"),
    ([1, -2**70], "token id -1180591620717411303424, far outside any vocabulary"),
    (np.array([1, 2**64 - 1], dtype=np.uint64), "token id 18446744073709551615, far outside any vocabulary"),
], ids=["past int64", "below int64", "unsigned past int64"])
def test_ids_no_integer_type_of_the_model_can_hold_are_named(model, prompt, says):
    assert says in _refusal(lambda: model.run(prompt))


@pytest.mark.parametrize("options, says", [
    (dict(ablate=[(0.5, 1)]), "ablate=[(0.5, 1)] must list (layer, head) pairs of whole numbers"),
    (dict(ablate=[(0, True)]), "ablate=[(0, True)]"),
    (dict(ablate=5), "ablate=5"),
    (dict(ablate=[("0", 1)]), "ablate=[('0', 1)]"),
    (dict(kernel="relu", kernel_layers=[0.5]), "kernel_layers=[0.5] must list layers as whole numbers"),
    (dict(kernel="relu", kernel_layers="01"), "kernel_layers='01'"),
    (dict(kernel="relu", kernel_layers=1), "kernel_layers=1"),
])
def test_interventions_take_whole_numbers_only(model, options, says):
    assert says in _refusal(lambda: model.run([1, 2, 3], **options))


def test_numpy_integers_are_whole_numbers_and_give_the_same_run(model):
    plain = model.run([1, 2, 3], steps=1, ablate=[(1, 2)], kernel="relu", kernel_layers=[0])
    numpy = model.run(np.array([1, 2, 3], dtype=np.int32), steps=np.int64(1), ablate=[(np.int64(1), np.int8(2))],
                      kernel="relu", kernel_layers=np.array([0]))
    assert numpy.ids.tolist() == plain.ids.tolist()
    np.testing.assert_array_equal(numpy.attention(1, 2), plain.attention(1, 2))


@pytest.mark.parametrize("args, says", [
    ((None, 0), "layer must be an integer, not None"),
    ((0, None), "head must be an integer, not None"),
    ((0.5, 0), "layer must be an integer, not 0.5"),
    (("0", 0), "layer must be an integer, not '0'"),
])
def test_attention_names_a_layer_or_head_that_is_not_an_integer(model, args, says):
    run = model.run([1, 2, 3], steps=1)
    assert says in _refusal(lambda: run.attention(*args))
