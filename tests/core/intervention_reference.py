"""Interventions written against transformers itself, independently of the engine.

- kernels and hidden entries: an attention function registered with transformers'
  AttentionInterface under a new name, which forms A = Z^-1 f(S) from query/key/value with its
  own causal (and sliding) mask; transformers passes it attention_mask=None, so it builds its own;
- head ablation and head patching: forward pre-hooks on W^O (o_proj / GPT-2's c_proj), whose
  input is concat_h O_h, so head h is the slice [h d_v, (h+1) d_v);
- residual patching: forward pre-hooks on the decoder layers (the residual stream entering them);
- removing an attention sublayer: a forward hook that makes the attention module return zeros.
"""
from __future__ import annotations

import contextlib

import numpy as np
import torch
from transformers import AttentionInterface


def attention_modules(hf_model) -> list[torch.nn.Module]:
    if hasattr(hf_model, "transformer"):                                     # GPT-2
        return [block.attn for block in hf_model.transformer.h]
    return [layer.self_attn for layer in hf_model.model.layers]


def output_projections(hf_model) -> list[torch.nn.Module]:
    """W^O of each layer: its input (B, T, H d_v) is the heads' outputs side by side."""
    return [getattr(attn, "o_proj", None) or attn.c_proj for attn in attention_modules(hf_model)]


def decoder_layers(hf_model) -> list[torch.nn.Module]:
    return list(hf_model.transformer.h) if hasattr(hf_model, "transformer") else list(hf_model.model.layers)


def reference_kernel(name: str, tau: float = 1.0):
    """f(S) of each kernel, on the visible entries."""
    if name == "exp":
        return lambda s: torch.exp(s / tau - (s / tau).amax(-1, keepdim=True))  # shift: Z^-1 cancels it
    if name == "linear":
        return lambda s: s
    return torch.relu


@contextlib.contextmanager
def registered_attention(hf_model, kernels: dict[int, tuple[str, float]] | None = None,
                         hidden: dict[int, np.ndarray] | None = None, patterns: dict | None = None):
    """Run hf_model with our own attention function: per layer a (kernel, tau), entries to hide, and
    patterns {layer: (head, rows (n, T), start)} written over A's rows start.. of that head."""
    kernels, hidden, patterns = kernels or {}, hidden or {}, patterns or {}

    def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        layer = module.layer_idx
        groups = query.shape[1] // key.shape[1]
        key, value = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
        scores = (query @ key.transpose(-1, -2)) * (scaling if scaling is not None else query.shape[-1] ** -0.5)
        t, n = scores.shape[-2:]
        i, j = torch.arange(t)[:, None] + (n - t), torch.arange(n)[None, :]
        visible = j <= i
        window = kwargs.get("sliding_window")
        if window:
            visible &= j > i - window
        if layer in hidden:
            visible &= ~torch.from_numpy(hidden[layer])
        name, tau = kernels.get(layer, ("exp", 1.0))
        f = torch.where(visible, reference_kernel(name, tau)(torch.where(visible, scores, 0.0)), 0.0)
        z = f.sum(-1, keepdim=True)
        weights = torch.where(z != 0, f / torch.where(z != 0, z, 1.0), 0.0)
        if layer in patterns:
            head, rows, start = patterns[layer]
            weights = weights.clone()
            weights[:, head, start: start + len(rows)] = torch.as_tensor(rows, dtype=weights.dtype)
        return (weights @ value).transpose(1, 2).contiguous(), weights

    name = "explorer_test_reference"
    AttentionInterface.register(name, attention)
    before = hf_model.config._attn_implementation
    hf_model.config._attn_implementation = name
    try:
        yield
    finally:
        hf_model.config._attn_implementation = before


@contextlib.contextmanager
def hooks(handles):
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def head_slices(hf_model, layer: int, n_heads: int):
    width = output_projections(hf_model)[layer].weight.shape
    d_in = width[0] if hasattr(hf_model, "transformer") else width[1]          # Conv1D stores (in, out)
    d_v = d_in // n_heads
    return lambda head: slice(head * d_v, (head + 1) * d_v)


def ablate_heads(hf_model, heads: list[tuple[int, int]], n_heads: int, mode: str = "zero", positions=None):
    """Pre-hooks on W^O setting O_h to 0 or to its mean over the positions of the pass, at `positions`
    (None: at every position)."""
    handles = []
    rows = slice(None) if positions is None else list(positions)
    for layer, head in heads:
        cols = head_slices(hf_model, layer, n_heads)(head)

        def hook(module, args, cols=cols):
            x = args[0].clone()                                               # (B, T, H d_v)
            mean = x[..., cols].mean(dim=-2)                                  # (B, d_v)
            x[:, rows, cols] = 0.0 if mode == "zero" else mean[:, None]
            return (x,) + tuple(args[1:])
        handles.append(output_projections(hf_model)[layer].register_forward_pre_hook(hook))
    return hooks(handles)


def record_head_inputs(hf_model) -> tuple[list, contextlib.AbstractContextManager]:
    """Pre-hooks that keep each W^O input (concat_h O_h) of one run: (B, T, H d_v) per layer."""
    kept = []
    handles = [proj.register_forward_pre_hook(lambda m, args: kept.append(args[0].clone()))
               for proj in output_projections(hf_model)]
    return kept, hooks(handles)


def patch_head(hf_model, layer: int, head: int, n_heads: int, clean: torch.Tensor):
    """A pre-hook on W^O of `layer` writing head `head`'s clean O_h at every position."""
    cols = head_slices(hf_model, layer, n_heads)(head)

    def hook(module, args):
        x = args[0].clone()
        x[..., cols] = clean[..., cols]
        return (x,) + tuple(args[1:])
    return hooks([output_projections(hf_model)[layer].register_forward_pre_hook(hook)])


def patch_residual(hf_model, layer: int, position: int, clean: torch.Tensor):
    """A pre-hook on decoder layer `layer` writing the clean residual (d,) at `position`."""
    def hook(module, args, kwargs):
        if args:
            h = args[0].clone()
            h[:, position] = clean
            return (h,) + tuple(args[1:]), kwargs
        h = kwargs["hidden_states"].clone()
        h[:, position] = clean
        return args, {**kwargs, "hidden_states": h}
    return hooks([decoder_layers(hf_model)[layer].register_forward_pre_hook(hook, with_kwargs=True)])


def record_residuals(hf_model) -> tuple[list, contextlib.AbstractContextManager]:
    """Pre-hooks keeping the residual stream (B, T, d) entering each decoder layer."""
    kept = []

    def hook(module, args, kwargs):
        kept.append((args[0] if args else kwargs["hidden_states"]).clone())
    handles = [layer.register_forward_pre_hook(hook, with_kwargs=True) for layer in decoder_layers(hf_model)]
    return kept, hooks(handles)


def silence_attention(hf_model, layer: int):
    """The attention sublayer of `layer` returns zeros: as if it were removed."""
    def hook(module, args, output):
        return (torch.zeros_like(output[0]),) + tuple(output[1:])
    return hooks([attention_modules(hf_model)[layer].register_forward_hook(hook)])


def logits(hf_model, ids) -> torch.Tensor:
    with torch.inference_mode():
        return hf_model(torch.as_tensor(ids)[None]).logits[0]


def sublayer_modules(hf_model, which: str) -> list[torch.nn.Module]:
    """The module whose output a block adds to its residual: attention or FFN (Gemma: its post-norm)."""
    out = []
    for block in decoder_layers(hf_model):
        if hasattr(block, "post_feedforward_layernorm"):                   # Gemma's sandwich norms
            out.append(block.post_attention_layernorm if which == "attn_out" else block.post_feedforward_layernorm)
        elif which == "attn_out":
            out.append(block.attn if hasattr(block, "attn") else block.self_attn)
        else:
            out.append(block.mlp)
    return out


def patch_output(module: torch.nn.Module, rows: torch.Tensor, start: int, cols=slice(None)):
    """A forward hook writing rows start.. (and columns `cols`, or one head: (head, heads_first)) of the
    module's output."""
    def hook(module, args, output):
        first = output[0] if isinstance(output, tuple) else output
        first = first.clone()
        values = torch.as_tensor(rows, dtype=first.dtype)
        if isinstance(cols, tuple):                                        # (head, heads before positions)
            head, heads_first = cols
            if heads_first:
                first[:, head, start: start + len(rows)] = values
            else:
                first[:, start: start + len(rows), head] = values
        else:
            first[:, start: start + len(rows), cols] = values
        return (first,) + tuple(output[1:]) if isinstance(output, tuple) else first
    return hooks([module.register_forward_hook(hook)])


def projection_columns(hf_model, layer: int, which: str, head: int):
    """The module whose output holds Q_h / K_g / V_g of `head` as projected (after any q/k norm, before
    RoPE), and the index of that head in its last dimension(s)."""
    attn = attention_modules(hf_model)[layer]
    if hasattr(attn, "c_attn"):                                            # GPT-2: Q|K|V side by side
        d = hf_model.config.n_embd
        d_head = d // hf_model.config.n_head
        offset = {"q": 0, "k": d, "v": 2 * d}[which]
        return attn.c_attn, slice(offset + head * d_head, offset + (head + 1) * d_head)
    if which != "v" and getattr(attn, "q_norm", None) is not None:          # (B, T, heads, d) after the norm
        heads_first = type(attn).__name__.startswith("Gemma")                # Gemma norms (B, heads, T, d)
        return getattr(attn, f"{which}_norm"), (head, heads_first)
    projection = getattr(attn, f"{which}_proj")
    d_head = attn.head_dim
    return projection, slice(head * d_head, (head + 1) * d_head)
