"""An intervention, or one of its parts, given a name outside its choices is refused in one sentence that names
the value and every choice (the algebra in explorer/core/intervention.py and intervention_parts.py):
- f_kappa is exp, linear or relu;
- a sublayer adds attn_out or mlp_out to the residual;
- a head reads q, k or v;
- a head sits in a decoder's self-attention, its cross-attention or an encoder's attention;
- an ablated O_h becomes zero or its mean over the prompt."""
from __future__ import annotations

import re

import numpy as np
import pytest

from explorer.core.errors import ExplorerError
from explorer.core.intervention import HeadAblation, Intervention, KeepOnly
from explorer.core.intervention_parts import InputPatch, Kernel, PathPatch, SublayerPatch

VALUES = np.zeros((1, 4), dtype=np.float32)
SITES = ("self", "cross", "encoder")

REFUSED = {
    "kernel": (lambda: Kernel("sigmoid"), "sigmoid", ("exp", "linear", "relu")),
    "sublayer output": (lambda: SublayerPatch(0, "attn_in", VALUES), "attn_in", ("attn_out", "mlp_out")),
    "head input": (lambda: InputPatch(0, 0, "o", VALUES), "o", ("q", "k", "v")),
    "path receiver": (lambda: PathPatch(0, 0, 1, 0, "o", VALUES), "o", ("q", "k", "v")),
    "sublayer": (lambda: Intervention(ablations=(HeadAblation(0, 1, where="mlp"),)), "mlp", SITES),
    "kept heads' sublayer": (lambda: Intervention(keep_only=KeepOnly(((0, 1),), where="ffn")), "ffn", SITES),
    "ablation": (lambda: Intervention().ablate(0, 1, mode="median"), "median", ("zero", "mean")),
}


@pytest.mark.parametrize("part", REFUSED)
def test_a_name_outside_the_choices_is_refused_naming_it_and_each_choice(part):
    make, bad, choices = REFUSED[part]
    with pytest.raises(ExplorerError) as refused:
        make()
    message = str(refused.value)
    assert repr(bad) in message and set(choices) <= set(re.findall(r"\w+", message)), message
    assert message.count("\n") == 0, message


@pytest.mark.parametrize("make", [lambda: Kernel("relu"), lambda: SublayerPatch(1, "mlp_out", VALUES),
                                  lambda: InputPatch(0, 1, "k", VALUES), lambda: PathPatch(0, 1, 1, 0, "v", VALUES)],
                         ids=["kernel", "sublayer output", "head input", "path receiver"])
def test_every_choice_named_is_accepted(make):
    make()


@pytest.mark.parametrize("where", SITES)
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_every_ablation_site_and_mode_is_accepted(where, mode):
    Intervention().ablate(0, 1, mode=mode, where=where)
