"""An intervention naming a sublayer or an ablation outside its choices is refused in one sentence naming
the value and every choice: a head sits in a decoder's self-attention, its cross-attention or an encoder's
attention; an ablated O_h becomes zero or its mean over the prompt."""
from __future__ import annotations

import re

import pytest

from explorer.core.errors import ExplorerError
from explorer.core.intervention import HeadAblation, Intervention, KeepOnly

REFUSED = {
    "sublayer": (lambda: Intervention(ablations=(HeadAblation(0, 1, where="mlp"),)), "mlp",
                 ("self", "cross", "encoder")),
    "kept heads' sublayer": (lambda: Intervention(keep_only=KeepOnly(((0, 1),), where="ffn")), "ffn",
                             ("self", "cross", "encoder")),
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


@pytest.mark.parametrize("where", ["self", "cross", "encoder"])
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_every_choice_named_is_accepted(where, mode):
    Intervention().ablate(0, 1, mode=mode, where=where)
