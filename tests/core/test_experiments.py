"""The next token before and after an intervention: top-k, KL and delta logit against transformers' hooks."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.errors import ExplorerError
from explorer.core.experiments import compare_next_token
from explorer.core.intervention import HeadAblation, Intervention
from tests.core import intervention_reference as ref

IDS = np.array([5, 17, 42, 8, 63, 21, 9], dtype=np.int64)


@pytest.mark.parametrize("family", ["llama", "gemma3", "deepseek_v2"])
def test_before_and_after_match_transformers_with_a_hook(family, hf_model, loaded):
    heads = [(1, 0), (1, 2)]
    result = compare_next_token(loaded, IDS, Intervention(ablations=tuple(HeadAblation(*h) for h in heads)), k=5)
    before = ref.logits(hf_model, IDS)[-1].double()
    with ref.ablate_heads(hf_model, heads, loaded.config.n_heads):
        after = ref.logits(hf_model, IDS)[-1].double()
    p, q = torch.softmax(before, -1), torch.softmax(after, -1)
    assert result.kl == pytest.approx(float((p * (p / q).log()).sum()), rel=1e-3, abs=1e-7)
    assert result.kl > 0
    assert result.before_ids.tolist() == p.topk(5).indices.tolist()
    assert result.after_ids.tolist() == q.topk(5).indices.tolist()
    np.testing.assert_allclose(result.after_probs, q.topk(5).values.numpy(), atol=1e-5)
    token = int(p.argmax())
    assert result.token_id == token
    assert result.delta_logit == pytest.approx(float(after[token] - before[token]), abs=1e-4)


def test_nothing_changed_is_zero_kl(loaded):
    result = compare_next_token(loaded, IDS, Intervention(), k=3, token_id=7)
    assert result.kl == 0.0 and result.delta_logit == 0.0 and result.token_id == 7
    with pytest.raises(ExplorerError, match="layer 9 does not exist"):
        compare_next_token(loaded, IDS, Intervention(ablations=(HeadAblation(9, 0),)))
