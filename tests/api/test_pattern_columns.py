"""A pattern patch needs a weight for every key of each row it writes: with fewer columns than a row's prompt has
keys it is refused in one sentence naming the patch, the row and the keys, the same whether the prompt runs
alone or in a batch (packed, or padded for an encoder), in a run or an attribution; with exactly as many
columns it runs."""
from __future__ import annotations

import re

import numpy as np
import pytest

import explorer
from tests.api import test_encoder_batches as encoder_batches
from tests.api.test_batches import PROMPTS
from tests.core.test_encoder import tiny_bert

SAYS = r"pattern patch of layer 1, head 2 has (\d+) columns, but its row for position (\d+) is over (\d+) keys"


def pattern(width: int, rows: int = 2) -> explorer.Intervention:
    values = np.full((rows, width), 1.0 / width, dtype=np.float32)
    return explorer.Intervention().patch_pattern(1, 2, values, start=1)


def refused(call, columns: int, keys: int) -> None:
    with pytest.raises(explorer.ExplorerError, match=SAYS) as error:
        call()
    width, _, over = (int(n) for n in re.search(SAYS, str(error.value)).groups())
    assert (width, over) == (columns, keys) and str(error.value).count(".") <= 1


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_a_pattern_narrower_than_a_prompts_keys_is_one_sentence_alone_and_in_a_batch(family, model):
    longest = max(PROMPTS, key=len)
    narrow = pattern(len(longest) - 1)
    refused(lambda: model.run(longest, intervention=narrow), len(longest) - 1, len(longest))
    refused(lambda: model.run(PROMPTS, intervention=narrow), len(longest) - 1, len(longest))
    refused(lambda: model.attribute(longest, target=3, against=4, intervention=narrow), len(longest) - 1,
            len(longest))
    refused(lambda: model.attribute(PROMPTS, target=[3] * 4, against=[4] * 4, intervention=narrow),
            len(longest) - 1, len(longest))
    exact = pattern(len(longest))
    alone = model.run(longest, intervention=exact)
    assert np.isfinite(alone.logits).all()
    batch = model.run(PROMPTS, intervention=exact)
    np.testing.assert_allclose(batch[PROMPTS.index(longest)].logits, alone.logits, rtol=1e-5, atol=1e-5)
    refused(lambda: model.run(longest, steps=1, intervention=pattern(len(longest), rows=len(longest))),
            len(longest), len(longest) + 1)                                   # the step's row reads one key more


def test_an_encoder_pattern_narrower_than_a_prompts_keys_is_one_sentence_alone_and_in_a_padded_batch():
    model = encoder_batches.tiny_model(tiny_bert(4))
    prompts = encoder_batches.PROMPTS
    longest = max(prompts, key=len)
    narrow = pattern(len(longest) - 1)
    refused(lambda: model.run(longest, intervention=narrow), len(longest) - 1, len(longest))
    refused(lambda: model.run(prompts, intervention=narrow), len(longest) - 1, len(longest))
    shorter = [p for p in prompts if len(p) < len(longest)]                   # each fits: a batch of them runs
    runs = model.run(shorter, intervention=narrow)
    for prompt, run in zip(shorter, runs):
        alone = model.run(prompt, intervention=narrow)
        encoder_batches.assert_same_run(run, alone)
