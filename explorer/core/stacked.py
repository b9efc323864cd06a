"""How a built model's weights lie in memory for its matrix products.

- Several Linear layers that read the same input are computed as one matmul over their stacked rows.
- A float32 weight W (out, in) in the model's own memory is stored by columns: W^T contiguous, the
  Linear holding its transposed view. The numbers are the same; on the CPU the product x W^T of one
  decoding row runs as (1, in) x (in, out), which BLAS streams ~1.4x faster than the (out, in) matrix-
  vector product it gets otherwise (SmolLM2-135M: 31 against 43 ms for every weight of one step,
  bench/bench_engine.py). Prefill products of many rows take the same time either way.
"""
from __future__ import annotations

import torch
from torch import nn


def stack_rows(linears) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """One weight [W_1; W_2; ...] (and bias) stacked by rows; each Linear's parameters become views of it.

    x [W_1; W_2]^T = [x W_1^T | x W_2^T]: one matmul reads the weights of several, with the same
    numbers, stored by columns where by_columns allows. The Linears keep their own names and shapes
    (weights_view, convert and the loaders see them unchanged) but share the stacked memory, so nothing
    is held twice.
    None, and nothing stacked, where the weights are views of one mapped file but not adjacent
    in it: stacking would copy them beside the file's pages (the model multiplies them one by one).
    """
    weight = _adjacent([linear.weight for linear in linears])
    if weight is None and _one_storage([linear.weight for linear in linears]):
        return None
    if weight is None:
        weights = [linear.weight for linear in linears]
        weight = (torch.cat([w.t() for w in weights], dim=1).t() if _faster_by_columns(weights[0])
                  else torch.cat(weights))                          # stacked, by columns, in one copy
    else:
        columns = by_columns(weight)                                # adjacent in a buffer of its own
        weight = weight if columns is None else columns
    bias = None if linears[0].bias is None else torch.cat([linear.bias for linear in linears])
    row = 0
    for linear in linears:
        rows = slice(row, row + linear.weight.shape[0])
        linear.weight = nn.Parameter(weight[rows], requires_grad=False)
        if bias is not None:
            linear.bias = nn.Parameter(bias[rows], requires_grad=False)
        row = rows.stop
    return weight, bias


def _one_storage(weights: list[torch.Tensor]) -> bool:
    return len({w.untyped_storage().data_ptr() for w in weights}) == 1


def _adjacent(weights: list[torch.Tensor]) -> torch.Tensor | None:
    """The stacked matrix as a view, when the weights already lie one after another in one buffer
    (a loader read them so); None otherwise."""
    first = weights[0]
    if first.dim() != 2 or any(not w.is_contiguous() or w.dtype != first.dtype or w.device != first.device
                               or w.dim() != 2 or w.shape[1] != first.shape[1] for w in weights):
        return None
    if any(w.untyped_storage().data_ptr() != first.untyped_storage().data_ptr() for w in weights):
        return None
    expected = first.data_ptr()
    for w in weights:
        if w.data_ptr() != expected:
            return None
        expected += w.numel() * w.element_size()
    rows = sum(w.shape[0] for w in weights)
    return first.as_strided((rows, first.shape[1]), (first.shape[1], 1))


def by_columns(weight: torch.Tensor) -> torch.Tensor | None:
    """W (out, in) as the transposed view of a contiguous W^T (in, out), the same numbers stored column by
    column; None where it is left as stored:
    - not float32 on the CPU (float16 products by columns are far slower; CUDA does either well);
    - a view of something bigger, i.e. of a memory-mapped file: rewriting it would copy it beside the
      file's pages, which is what loading mapped weights avoids."""
    if (not _faster_by_columns(weight) or not weight.is_contiguous()
            or weight.untyped_storage().nbytes() != weight.numel() * weight.element_size()):
        return None
    return weight.t().contiguous().t()


def _faster_by_columns(weight: torch.Tensor) -> bool:
    """Whether W's product runs faster stored by columns: a float32 matrix on the CPU."""
    return weight.dim() == 2 and weight.dtype == torch.float32 and weight.device.type == "cpu"


def store_by_columns(linear: nn.Linear) -> None:
    """The Linear's weight stored by columns where by_columns allows (the same numbers, a faster product)."""
    columns = by_columns(linear.weight)
    if columns is not None:
        linear.weight = nn.Parameter(columns, requires_grad=False)
