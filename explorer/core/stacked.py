"""Several Linear layers that read the same input, computed as one matmul over their stacked rows."""
from __future__ import annotations

import torch
from torch import nn


def stack_rows(linears) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One weight [W_1; W_2; ...] (and bias) stacked by rows; each Linear's parameters become views of it.

    x [W_1; W_2]^T = [x W_1^T | x W_2^T]: one matmul reads the weights of several, with the same
    numbers. The Linears keep their own names and shapes (weights_view, convert and the loaders
    see them unchanged) but share the stacked memory, so nothing is held twice.
    """
    weight = torch.cat([linear.weight for linear in linears])
    bias = None if linears[0].bias is None else torch.cat([linear.bias for linear in linears])
    row = 0
    for linear in linears:
        rows = slice(row, row + linear.weight.shape[0])
        linear.weight = nn.Parameter(weight[rows], requires_grad=False)
        if bias is not None:
            linear.bias = nn.Parameter(bias[rows], requires_grad=False)
        row = rows.stop
    return weight, bias
