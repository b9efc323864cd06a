"""DeepSeekMoE feed-forward (Dai et al. 2024; DeepSeek-V2, DeepSeek-V3).

    y = sum_{i in TopK(s(x))} g_i FFN_i(x) + sum_j FFN_shared_j(x)

Routing scores s come from a softmax (V2) or a sigmoid with a load-balancing
bias used only for the choice (V3, "noaux_tc"); experts may first be limited
to the best `topk_group` of `n_group` groups.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from explorer.core.stacked import stack_rows, store_by_columns


class GatedMLP(nn.Module):
    """FFN(x) = W_down (act(x W_gate) * x W_up)  (Shazeer 2020, GLU variants)."""

    def __init__(self, d_model: int, d_ff: int, activation, bias: bool = False):
        super().__init__()
        self.w_gate = nn.Linear(d_model, d_ff, bias=bias)
        self.w_up = nn.Linear(d_model, d_ff, bias=bias)
        self.w_down = nn.Linear(d_ff, d_model, bias=bias)
        self.act = activation
        self.stacked = None             # [W_gate; W_up] once fuse() has run (a built model, not training)

    def fuse(self) -> None:
        self.stacked = stack_rows((self.w_gate, self.w_up))
        store_by_columns(self.w_down)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """act(x W_gate) * x W_up: (T, d_ff), what W_down reads."""
        if self.stacked is None:
            gate, up = self.w_gate(x), self.w_up(x)
        else:
            gate, up = F.linear(x, *self.stacked).chunk(2, dim=-1)              # x [W_gate; W_up]^T
        return self.act(gate) * up

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w_down = self.w_down
        return F.linear(self.hidden(x), w_down.weight, w_down.bias)             # (act(x W_gate) * x W_up) W_down


class Experts(nn.Module):
    """The routed experts' weights, stacked: W_gate, W_up (E, d_ff, d) and W_down (E, d, d_ff)."""

    def __init__(self, n_experts: int, d_model: int, d_ff: int, activation):
        super().__init__()
        self.w_gate = nn.Parameter(torch.empty(n_experts, d_ff, d_model))
        self.w_up = nn.Parameter(torch.empty(n_experts, d_ff, d_model))
        self.w_down = nn.Parameter(torch.empty(n_experts, d_model, d_ff))
        self.act = activation

    def expert(self, e: int, x: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(x, self.w_gate[e]), F.linear(x, self.w_up[e])
        return F.linear(self.act(gate) * up, self.w_down[e])


class Router(nn.Module):
    """Chooses k experts per token and their weights g (computed in float32, as the references do)."""

    def __init__(self, config):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(config.n_routed_experts, config.d_model))
        self.bias = nn.Parameter(torch.zeros(config.n_routed_experts)) if config.router_score == "sigmoid" else None
        self.top_k, self.score, self.groups = config.experts_per_token, config.router_score, config.router_groups
        self.n_group, self.topk_group = config.n_group, config.topk_group
        self.norm_topk_prob, self.scaling = config.norm_topk_prob, config.routed_scaling

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = F.linear(x.float(), self.weight.float())                       # (T, E)
        scores = logits.softmax(dim=-1) if self.score == "softmax" else logits.sigmoid()
        choice = scores if self.bias is None else scores + self.bias.float()
        if self.groups != "greedy":
            choice = self._limit_to_groups(choice)
        index = torch.topk(choice, k=self.top_k, dim=-1, sorted=False)[1]       # (T, k)
        weights = scores.gather(1, index)                                       # (T, k)
        if self.norm_topk_prob:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return weights * self.scaling, index

    def _limit_to_groups(self, choice: torch.Tensor) -> torch.Tensor:
        t, n_experts = choice.shape
        grouped = choice.view(t, self.n_group, n_experts // self.n_group)       # (T, G, E/G)
        if self.groups == "noaux_tc":
            group_scores = grouped.topk(2, dim=-1)[0].sum(dim=-1)               # (T, G)
        else:
            group_scores = grouped.max(dim=-1).values
        best = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        keep = torch.zeros_like(group_scores).scatter_(1, best, 1).bool()       # (T, G)
        keep = keep[:, :, None].expand_as(grouped).reshape(t, n_experts)
        fill = float("-inf") if self.groups == "noaux_tc" else 0.0
        return choice.masked_fill(~keep, fill)


class MoE(nn.Module):
    """Routed experts (top-k of E) plus always-on shared experts."""

    def __init__(self, config, activation):
        super().__init__()
        self.router = Router(config)
        self.experts = Experts(config.n_routed_experts, config.d_model, config.moe_d_ff, activation)
        self.shared = (GatedMLP(config.d_model, config.moe_d_ff * config.n_shared_experts, activation)
                       if config.n_shared_experts else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, index = self.router(x)                                         # (T, k) each
        y = torch.zeros_like(x)                                                 # (T, d)
        for e in torch.unique(index).tolist():
            tokens, slot = torch.where(index == e)
            out = self.experts.expert(e, x[tokens]) * weights[tokens, slot, None].to(x.dtype)
            y.index_add_(0, tokens, out)
        return y if self.shared is None else y + self.shared(x)
