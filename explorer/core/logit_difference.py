"""Attribution of a logit difference, and the logit lens of that difference, at one position.

    D = z_t - z_a = u_D . Norm(h_L),   u_D = W_U[t] - W_U[a]

With the final norm's scale frozen at this position (attribution.py), D splits exactly as z does:

    D = embed + sum_{l,h} heads[l, h] + sum_l mlp[l] + rest,

each part the target's attribution minus the other token's. The lens reads D from the residual
stream after the embedding and after each block, each through the full final norm at its own
scale: lens[l] = (W_U[t] - W_U[a]) . Norm(h_l), so lens[L] = D (the logit lens for two tokens).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.core.attribution import attribute_capture, capture_at, check_request, largest_parts


@dataclass(frozen=True)
class LogitDifference:
    """D = logit(target) - logit(against) (pre-softcap) = embed + heads.sum() + mlp.sum() + rest."""

    position: int
    target_id: int
    against_id: int
    difference: float
    embed: float
    heads: np.ndarray            # (L, N_Q)
    mlp: np.ndarray              # (L,)
    rest: float
    lens: np.ndarray             # (L + 1,) D read from h_0 (the embedding) and from h after each block

    def total(self) -> float:
        return float(self.embed + self.heads.sum() + self.mlp.sum() + self.rest)

    def largest(self, k: int = 12) -> list[tuple[str, float]]:
        """The k parts of largest |contribution|, named "embed", "L3.H5", "MLP 3", "rest"."""
        return largest_parts(self, k)

    def as_json(self) -> dict:
        return {"position": self.position, "target_id": self.target_id, "against_id": self.against_id,
                "difference": self.difference, "embed": self.embed, "heads": self.heads.tolist(),
                "mlp": self.mlp.tolist(), "rest": self.rest, "lens": self.lens.tolist()}


def logit_difference(loaded, ids, target_id: int, against_id: int, position: int | None = None,
                     intervention=None) -> LogitDifference:
    """The parts of logit(target) - logit(against) after `position` (default: the last) of `ids`,
    under `intervention` (None: the model as it is), and its lens after each layer."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    position = _checked(loaded, ids, position, target_id, against_id)
    return difference_of(loaded, capture_at(loaded, ids, position, intervention), position, target_id, against_id)


def logit_differences(loaded, prompts, target_ids, against_ids, positions, intervention=None) -> list[LogitDifference]:
    """logit_difference of each prompt, from one packed pass over all of them (packed.py) where that equals
    their own passes, else one pass each."""
    from explorer.core.packed import can_pack, packed_captures

    prompts = [np.asarray(ids, dtype=np.int64).reshape(-1) for ids in prompts]
    positions = [_checked(loaded, ids, p, t, a) for ids, p, t, a in zip(prompts, positions, target_ids, against_ids)]
    if not can_pack(intervention):
        return [logit_difference(loaded, *row, intervention) for row in zip(prompts, target_ids, against_ids, positions)]
    captures = packed_captures(loaded, prompts, positions, intervention)
    return [difference_of(loaded, *row) for row in zip(captures, positions, target_ids, against_ids)]


def _checked(loaded, ids: np.ndarray, position: int | None, target_id: int, against_id: int) -> int:
    position = check_request(loaded, ids, position, target_id)
    check_request(loaded, ids, position, against_id)
    return position


def difference_of(loaded, capture, position: int, target_id: int, against_id: int) -> LogitDifference:
    """The LogitDifference at the last row of `capture` (that row being `position` of its prompt)."""
    target = attribute_capture(loaded, capture, position, int(target_id))
    against = attribute_capture(loaded, capture, position, int(against_id))
    model = loaded.model
    with torch.inference_mode():
        streams = torch.stack([capture.layers[0].residual_in[-1]] + [layer.residual[-1] for layer in capture.layers])
        rows = model.lm_head.weight[[int(target_id), int(against_id)]]                # (2, d)
        read = (model.norm(streams) @ rows.T).double()                                   # (L + 1, 2)
        lens = (read[:, 0] - read[:, 1]).cpu().numpy()
    return LogitDifference(
        position=position, target_id=int(target_id), against_id=int(against_id),
        difference=target.logit - against.logit, embed=target.embed - against.embed,
        heads=target.heads - against.heads, mlp=target.mlp - against.mlp, rest=target.rest - against.rest,
        lens=lens)
