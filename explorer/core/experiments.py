"""The next token before and after an intervention, side by side.

    p = softmax(z),  q = softmax(z'),  KL(p || q) = sum_v p_v (log p_v - log q_v),
    delta logit = z'_t - z_t  for the chosen token t (default: the top token before)

z are the logits after the last position of `ids` without the intervention, z' with it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.core.errors import ExplorerError
from explorer.core.intervention import Intervention


@dataclass(frozen=True)
class NextTokenComparison:
    """Top-k before and after, KL(before || after) in nats, and the chosen token's logits."""

    before_ids: np.ndarray          # (k,)
    before_probs: np.ndarray        # (k,)
    after_ids: np.ndarray           # (k,)
    after_probs: np.ndarray         # (k,)
    kl: float
    token_id: int
    logit_before: float
    logit_after: float
    prob_before: float
    prob_after: float

    @property
    def delta_logit(self) -> float:
        return self.logit_after - self.logit_before


def next_logits(loaded, ids, intervention: Intervention | None) -> torch.Tensor:
    """z (V,) after the last of `ids`, in float64, from one uncached pass under `intervention`."""
    if loaded.info.is_encoder_only or loaded.info.is_encoder_decoder:
        raise ExplorerError(f"the before/after comparison runs on decoder-only models; {loaded.info.name} is not one")
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if ids.size == 0:
        raise ExplorerError("the prompt is empty: give at least one token")
    model = loaded.model
    with torch.inference_mode():
        hidden = model(torch.as_tensor(ids, device=model.embed.weight.device), np.arange(len(ids)), None, None,
                       intervention)
        return model.logits(hidden[-1:])[0].double().cpu()


def compare_next_token(loaded, ids, intervention: Intervention, k: int = 10,
                       token_id: int | None = None) -> NextTokenComparison:
    """The next token after `ids` without and with `intervention` (see the module docstring)."""
    intervention.check(loaded.config.n_layers, loaded.config.n_heads)
    before, after = next_logits(loaded, ids, None), next_logits(loaded, ids, intervention)
    log_p, log_q = torch.log_softmax(before, -1), torch.log_softmax(after, -1)
    kl = float((log_p.exp() * (log_p - log_q)).sum())
    token = int(before.argmax()) if token_id is None else int(token_id)
    top_p, top_q = log_p.exp().topk(k), log_q.exp().topk(k)
    return NextTokenComparison(
        before_ids=top_p.indices.numpy(), before_probs=top_p.values.float().numpy(),
        after_ids=top_q.indices.numpy(), after_probs=top_q.values.float().numpy(), kl=kl, token_id=token,
        logit_before=float(before[token]), logit_after=float(after[token]),
        prob_before=float(log_p[token].exp()), prob_after=float(log_q[token].exp()))
