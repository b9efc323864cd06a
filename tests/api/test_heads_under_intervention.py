"""model.heads under an explorer.Intervention, for one sequence and for several (one packed pass), against the
scores written from transformers' own attention weights (eager, output_attentions) under the same edit made with
a hook on W^O; and explorer.Intervention is the public, frozen value every research call takes."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import explorer
from tests.core import intervention_reference as ref

SEQUENCES = [[5, 17, 33, 2, 71, 40, 9, 88], [12, 4, 60, 31, 8]]


def hooked_scores(hf_model, ids: list[int], repeat: int, edit: tuple) -> tuple[np.ndarray, ...]:
    """previous-token, induction and sink scores (L, H) on ids * repeat, from transformers' attention weights
    under an ablation made with pre-hooks on W^O: A[i, i-1], A[i, i-N+1] over the repeats, A[i, 0]."""
    sequence = torch.tensor([ids * repeat])
    layer, head, mode, positions = edit
    with ref.ablate_heads(hf_model, [(layer, head)], hf_model.config.num_attention_heads, mode, positions), \
            torch.inference_mode():
        weights = hf_model(sequence, output_attentions=True).attentions                 # L x (1, H, T, T)
    n, t = len(ids), sequence.shape[1]
    rows, later = np.arange(1, t), np.arange(n, t)
    maps = [w[0].double().numpy() for w in weights]
    return (np.stack([a[:, rows, rows - 1].mean(-1) for a in maps]),
            np.stack([a[:, later, later - n + 1].mean(-1) for a in maps]),
            np.stack([a[:, rows, 0].mean(-1) for a in maps]))


@pytest.mark.parametrize("family", ["llama", "gpt2"])
@pytest.mark.parametrize("mode, positions", [("zero", None), ("mean", [3, 9])])
def test_head_scores_under_an_ablation_equal_transformers_attention_under_hooks(family, hf_model, model, mode,
                                                                                positions):
    edit = explorer.Intervention().ablate(0, 1, mode, positions=positions)
    expected = [hooked_scores(hf_model, ids, 2, (0, 1, mode, positions)) for ids in SEQUENCES]
    alone = model.heads(SEQUENCES[0], repeat=2, intervention=edit)
    both = model.heads(SEQUENCES, repeat=2, intervention=edit)                       # one packed pass, their mean
    for got, want in zip((alone.previous_token, alone.induction, alone.sink), expected[0]):
        np.testing.assert_allclose(got, want, atol=1e-5)
    for got, *wants in zip((both.previous_token, both.induction, both.sink), *expected):
        np.testing.assert_allclose(got, np.mean(wants, axis=0), atol=1e-5)
    plain = model.heads(SEQUENCES[0], repeat=2)
    assert np.abs(plain.previous_token[1] - alone.previous_token[1]).max() > 1e-4     # layer 1 sees the edit


@pytest.mark.parametrize("family", ["llama"])
def test_the_intervention_is_public_and_frozen(family, model):
    from explorer.core.intervention import Intervention

    assert explorer.Intervention is Intervention
    edit = explorer.Intervention().ablate(0, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        edit.ablations = ()
    with pytest.raises(explorer.ExplorerError, match="Intervention"):
        model.heads(SEQUENCES[0], intervention="ablate 0.1")
