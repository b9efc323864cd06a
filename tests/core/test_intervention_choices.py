"""An intervention part given a name outside its choices is refused in one sentence that names the value
and every choice: f_kappa is exp, linear or relu; a sublayer adds attn_out or mlp_out to the residual; a
head reads q, k or v (the algebra in explorer/core/intervention_parts.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from explorer.core.errors import ExplorerError
from explorer.core.intervention_parts import InputPatch, Kernel, PathPatch, SublayerPatch

VALUES = np.zeros((1, 4), dtype=np.float32)

REFUSED = {
    "kernel": (lambda: Kernel("sigmoid"), "sigmoid", ("exp", "linear", "relu")),
    "sublayer output": (lambda: SublayerPatch(0, "attn_in", VALUES), "attn_in", ("attn_out", "mlp_out")),
    "head input": (lambda: InputPatch(0, 0, "o", VALUES), "o", ("q", "k", "v")),
    "path receiver": (lambda: PathPatch(0, 0, 1, 0, "o", VALUES), "o", ("q", "k", "v")),
}


@pytest.mark.parametrize("part", REFUSED)
def test_a_name_outside_the_choices_is_refused_naming_it_and_each_choice(part):
    make, bad, choices = REFUSED[part]
    with pytest.raises(ExplorerError) as refused:
        make()
    message = str(refused.value)
    named = set(re.findall(r"\w+", message))
    assert repr(bad) in message and set(choices) <= named, message
    assert message.count("\n") == 0, message


@pytest.mark.parametrize("make", [lambda: Kernel("relu"), lambda: SublayerPatch(1, "mlp_out", VALUES),
                                  lambda: InputPatch(0, 1, "k", VALUES), lambda: PathPatch(0, 1, 1, 0, "v", VALUES)],
                         ids=["kernel", "sublayer output", "head input", "path receiver"])
def test_every_choice_named_is_accepted(make):
    make()
