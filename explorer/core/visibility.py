"""Which keys each query of one attention pass sees, as torch needs it: the boolean mask, the hidden entries as a
tensor, the queries' and keys' absolute positions, and the MaskRule the mask was made by (attention_maps.MaskRule,
the one mask rule), carried from StepContext (attention.py) to the record."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from explorer.core.attention_maps import MaskRule


@dataclass(frozen=True)
class Visibility:
    """mask (T, n_kv) bool, True where query i may attend key j; `hidden` the torch tensor of the
    hidden entries (None when nothing is hidden; it may carry a batch's padding as well);
    the absolute positions of the queries (T,) and of the keys (n_kv,), for packed
    sequences which one each query row belongs to, and the MaskRule `mask` was made by
    (None where it is not one: edited, packed; `without` drops it); `padding` a padded batch's
    (B, 1, 1, n_kv), True at its padded keys (self-attention: its padded rows too); `prompts` a packed pass's
    prompts, each with its own rule (fused_attention.packed_visibility: `mask` and `hidden` None where it is taken
    in runs of squares, no S x S mask made; `without` drops them)."""

    mask: np.ndarray | None
    hidden: torch.Tensor | None
    queries: np.ndarray
    keys: np.ndarray
    sequences: np.ndarray | None = None
    rule: MaskRule | None = None
    padding: torch.Tensor | None = None
    prompts: object | None = None               # fused_attention.PackedPrompts

    @staticmethod
    def of(visible: np.ndarray, queries: np.ndarray, keys: np.ndarray, device, sequences=None,
           rule: MaskRule | None = None) -> "Visibility":
        hidden = None if visible.all() else torch.from_numpy(~visible).to(device)
        return Visibility(visible, hidden, queries, keys, sequences, rule)

    @staticmethod
    def by(rule: MaskRule, device, padding: torch.Tensor | None = None) -> "Visibility":
        """The visibility `rule` gives over its queries and keys, carrying the rule to the record; `padding`
        (True at a batch's padded keys, broadcast over the scores) is hidden as well, outside the rule."""
        seen = Visibility.of(np.asarray(rule), rule.queries, rule.keys, device, rule=rule)  # mask: (T, n_kv)
        if padding is None:
            return seen
        return replace(seen, hidden=padding if seen.hidden is None else seen.hidden | padding, padding=padding)

    def without(self, hidden: np.ndarray | None) -> "Visibility":
        """This visibility with the entries of `hidden` (T, n_kv) hidden as well."""
        if hidden is None or not hidden.any():
            return self
        extra = torch.from_numpy(hidden).to(self.hidden.device if self.hidden is not None else "cpu")
        return Visibility(self.mask & ~hidden, extra if self.hidden is None else self.hidden | extra,
                          self.queries, self.keys, self.sequences, padding=self.padding)


