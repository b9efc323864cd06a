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

from explorer.core.attribution import capture_at, check_request, freeze, largest_parts
from explorer.core.packed import packed_captures


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
    return differences_of(loaded, [capture_at(loaded, ids, position, intervention)], [position], [target_id],
                          [against_id])[0]


def logit_differences(loaded, prompts, target_ids, against_ids, positions, intervention=None) -> list[LogitDifference]:
    """logit_difference of each prompt, from packed passes over them (packed.py: equal to their own passes
    under any intervention) that keep only each prompt's row at its position (packed.LastRows)."""
    prompts = [np.asarray(ids, dtype=np.int64).reshape(-1) for ids in prompts]
    positions = [_checked(loaded, ids, p, t, a) for ids, p, t, a in zip(prompts, positions, target_ids, against_ids)]
    captures = packed_captures(loaded, prompts, positions, intervention, last_only=True)
    return differences_of(loaded, captures, positions, target_ids, against_ids)


def _checked(loaded, ids: np.ndarray, position: int | None, target_id: int, against_id: int) -> int:
    position = check_request(loaded, ids, position, target_id)
    check_request(loaded, ids, position, against_id)
    return position


def differences_of(loaded, captures: list, positions: list[int], target_ids: list[int],
                   against_ids: list[int]) -> list[LogitDifference]:
    """The LogitDifference at the last row of each capture (that row being its prompt's `position`).

    Attribution is linear in the unembedding row it reads (attribution.py: u = Norm'(W_U[N]) with the
    norm's scale frozen), so D's parts are read once along W_U[t] - W_U[a] rather than once per token,
    and each layer's W^O is taken to float64 once for all the captures."""
    model = loaded.model
    targets, againsts = [int(t) for t in target_ids], [int(a) for a in against_ids]
    with torch.inference_mode():
        last = torch.stack([capture.layers[-1].residual[-1] for capture in captures])          # (B, d)
        unembed = model.lm_head.weight
        z = (model.norm(last)[:, None, :] * unembed[torch.as_tensor([targets, againsts]).T]).sum(-1).double()  # (B, 2)
        reads = [freeze(model.norm, h).read((unembed[t] - unembed[a]).double())
                 for h, t, a in zip(last, targets, againsts)]
        u = torch.stack([read[0] for read in reads])                                            # (B, d) float64
        rest = np.array([float(read[1]) for read in reads])
        heads, mlp = [], []
        for block, layers in zip(model.layers, zip(*(capture.layers for capture in captures))):
            parts, bias_parts = _head_parts(block, layers, u)
            heads.append(parts)
            rest += bias_parts
            mlp.append((torch.stack([layer.ffn_out[-1] for layer in layers]).double() * u).sum(-1).cpu().numpy())
        embed = (torch.stack([c.layers[0].residual_in[-1] for c in captures]).double() * u).sum(-1).cpu().numpy()
        lenses = [_lens(model, capture, t, a) for capture, t, a in zip(captures, targets, againsts)]
    heads, mlp = np.stack(heads, axis=1), np.stack(mlp, axis=1)                                 # (B, L, N_Q), (B, L)
    return [LogitDifference(position=p, target_id=t, against_id=a, difference=float(zs[0] - zs[1]), embed=float(e),
                            heads=h, mlp=m, rest=float(r), lens=lens)
            for p, t, a, zs, e, h, m, r, lens in zip(positions, targets, againsts, z.cpu().numpy(), embed, heads, mlp,
                                                     rest, lenses)]


def _head_parts(block, layers, u: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """u . O_h W^O_h of each head of one layer at each capture's last row (B, N_Q), and the biases' parts (B,);
    Gemma's post-attention norm is frozen at each capture's sum of heads (attribution._head_parts)."""
    wo = block.attn.wo
    outs = torch.stack([layer.attn.head_out[:, -1] for layer in layers]).double()              # O_h: (B, N_Q, d_v)
    n_heads, d_v = outs.shape[1:]
    per_head = torch.einsum("dhv,bhv->bhd", wo.weight.double().view(-1, n_heads, d_v), outs)  # O_h W^O_h: (B, N_Q, d)
    bias = wo.bias.double() if wo.bias is not None else None
    if block.post_attn_norm is None:
        reads, constants = u, torch.zeros(len(u), dtype=torch.float64)
    else:                                                                      # a = Norm(sum_h O_h W^O_h + b)
        frozen = [freeze(block.post_attn_norm, y + (bias if bias is not None else 0.0)).read(one)
                  for y, one in zip(per_head.sum(1), u)]
        reads = torch.stack([read[0] for read in frozen])
        constants = torch.tensor([float(read[1]) for read in frozen], dtype=torch.float64)
    parts = torch.einsum("bhd,bd->bh", per_head, reads)
    if bias is not None:
        constants = constants + reads @ bias
    return parts.cpu().numpy(), constants.cpu().numpy()


def _lens(model, capture, target_id: int, against_id: int) -> np.ndarray:
    """D read from h after the embedding and after each block, through the full final norm: (L + 1,)."""
    streams = torch.stack([capture.layers[0].residual_in[-1]] + [layer.residual[-1] for layer in capture.layers])
    rows = model.lm_head.weight[[target_id, against_id]]                                  # (2, d)
    read = (model.norm(streams) @ rows.T).double()                                         # (L + 1, 2)
    return (read[:, 0] - read[:, 1]).cpu().numpy()
