"""Multi-head Latent Attention (DeepSeek-V2, 2024, section 2.1).

Keys and values of all heads come from one small latent per token:

    c_KV = RMSNorm(X W^DKV)            (T, d_c)   -- what the cache holds
    k_R  = RoPE(X W^KR)                (T, d_R)   -- shared by all heads, also cached
    K_h  = [c_KV W_h^UK ; k_R],  V_h = c_KV W_h^UV
    Q_h  = [X' W_h^UQ ; RoPE(X' W_h^QR)],  X' = RMSNorm(X W^DQ) when q_lora_rank is set

Naive path: expand K_h and V_h for every cached token, then attend as usual.
Absorbed path (DeepSeek's inference code): never expand. W^UK folds into the
query and W^UV into the output:

    S_h = (q_h^nope W_h^UK^T) c_KV^T + q_h^R k_R^T,   O_h = (A_h c_KV) W_h^UV^T
"""
from __future__ import annotations

import torch
from torch import nn

from explorer.core import fused_attention
from explorer.core.attention import StepContext, attend
from explorer.core.capture import AttentionCapture
from explorer.core.errors import ExplorerError
from explorer.core.intervention import SOFTMAX


class LatentAttention(nn.Module):
    """MLA with optional query LoRA, a kv_lora_rank latent and a decoupled RoPE key."""

    absorbed = True  # the decoding path; tests flip it to compare with the naive expansion

    def __init__(self, config, layer: int, norm_class):
        super().__init__()
        d = config.d_model
        self.layer, self.n_heads = layer, config.n_heads
        self.d_nope, self.d_rope, self.d_v = config.qk_nope_dim, config.qk_rope_dim, config.v_head_dim
        self.d_c = config.kv_lora_rank
        d_qk = self.d_nope + self.d_rope
        if config.q_lora_rank:
            self.wq_a = nn.Linear(d, config.q_lora_rank, bias=config.o_bias)    # W^DQ
            self.q_norm = norm_class(config.q_lora_rank, 1e-6)
            self.wq_b = nn.Linear(config.q_lora_rank, self.n_heads * d_qk, bias=False)  # [W^UQ; W^QR]
        else:
            self.wq = nn.Linear(d, self.n_heads * d_qk, bias=False)
        self.wkv_a = nn.Linear(d, self.d_c + self.d_rope, bias=config.o_bias)   # [W^DKV; W^KR]
        self.kv_norm = norm_class(self.d_c, 1e-6)
        self.wkv_b = nn.Linear(self.d_c, self.n_heads * (self.d_nope + self.d_v), bias=False)  # [W^UK; W^UV]
        self.wo = nn.Linear(self.n_heads * self.d_v, d, bias=config.o_bias)
        self.scale = config.attn_scale

    def up_projections(self) -> tuple[torch.Tensor, torch.Tensor]:
        """W^UK (H, d_nope, d_c) and W^UV (H, d_v, d_c), views of wkv_b."""
        w = self.wkv_b.weight.view(self.n_heads, self.d_nope + self.d_v, self.d_c)
        return w[:, : self.d_nope], w[:, self.d_nope:]

    def queries(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[0]
        q = self.wq_b(self.q_norm(self.wq_a(x))) if hasattr(self, "wq_a") else self.wq(x)
        return q.view(t, self.n_heads, self.d_nope + self.d_rope).transpose(0, 1)  # (H, T, d_qk)

    def forward(self, x: torch.Tensor, step: StepContext, cache=None, capture=None) -> torch.Tensor:
        t = x.shape[0]                                                           # x: (T, d_model)
        q = self.queries(x)
        q_nope, q_rope_pre = q.split([self.d_nope, self.d_rope], dim=-1)        # (H, T, d_nope), (H, T, d_R)
        latent, k_rope_pre = self.wkv_a(x).split([self.d_c, self.d_rope], dim=-1)
        latent = self.kv_norm(latent)                                            # c_KV: (T, d_c)
        rotary, table = step.rotaries["global"], step.rotation("global")
        q_rope = rotary.rotate(q_rope_pre.transpose(0, 1), table).transpose(0, 1)  # (H, T, d_R)
        k_rope = rotary.rotate(k_rope_pre[:, None], table)[:, 0]                   # k_R: (T, d_R)

        if cache is None:
            latents, rope_keys, kv_positions = latent, k_rope, step.positions_np
        else:
            latents, rope_keys, kv_positions = cache.update(latent, k_rope)     # (n_kv, d_c), (n_kv, d_R)
        seen = step.mask(kv_positions, None)
        site = step.site(self.layer, self.n_heads)
        if site is not None and (site.plan.inputs or site.plan.paths or site.plan.senders):
            raise ExplorerError("a Q, K or V patch or a path names a head's own projection, which latent attention "
                                "(MLA) does not have: patch the head's output or pattern instead")
        w_uk, w_uv = self.up_projections()
        path = self._absorbed if self.absorbed else self._naive
        weights, heads, seen, prompts = fused_attention.in_squares(         # a packed pass: in its squares
            lambda *rows: path(*rows, w_uk, w_uv, site), seen, (q_nope, q_rope, latents, rope_keys), site is not None)
        y = self.wo(heads.transpose(0, 1).reshape(t, -1))                        # (T, d_model)

        if capture is not None:
            self._record(capture, q_nope, q_rope, q_rope_pre, latent, k_rope, k_rope_pre, w_uk, w_uv,
                         weights, heads, seen, site, prompts)
        return y

    def _absorbed(self, q_nope, q_rope, latents, rope_keys, seen, w_uk, w_uv, site):
        q_latent = q_nope @ w_uk                                                 # q W^UK: (..., H, T, d_c)
        scores = (q_latent @ latents.transpose(-1, -2) + q_rope @ rope_keys.transpose(-1, -2)) * self.scale
        return attend(scores, seen, lambda a: (a @ latents) @ w_uv.transpose(1, 2), None, site)  # (A c_KV) W^UV^T

    def _naive(self, q_nope, q_rope, latents, rope_keys, seen, w_uk, w_uv, site):
        keys, values = self.expand(latents, rope_keys, w_uk, w_uv)               # (H, n_kv, d_qk), (H, n_kv, d_v)
        q = torch.cat((q_nope, q_rope), dim=-1)                                  # (H, T, d_qk)
        scores = (q @ keys.transpose(-1, -2)) * self.scale
        return attend(scores, seen, lambda a: a @ values, None, site)           # O_h = A_h V_h

    def expand(self, latents, rope_keys, w_uk, w_uv):
        """K_h = [c W_h^UK^T ; k_R] and V_h = c W_h^UV^T for every head: (..., H, n, d_qk), (..., H, n, d_v)
        (...: a batch of prompts (c, k_R: (B, 1, n, d)), or none)."""
        k_nope = latents @ w_uk.transpose(1, 2)                                  # (..., H, n, d_nope)
        k_rope = rope_keys.expand(*k_nope.shape[:-1], -1)                        # (..., H, n, d_R)
        return torch.cat((k_nope, k_rope), dim=-1), latents @ w_uv.transpose(1, 2)

    def _record(self, capture, q_nope, q_rope, q_rope_pre, latent, k_rope, k_rope_pre, w_uk, w_uv,
                weights, heads, seen, site, prompts):
        """Per-head Q/K/V of the new tokens, expanded from the latent for display only."""
        keys, values = self.expand(latent, k_rope, w_uk, w_uv)
        keys_pre = torch.cat((keys[..., : self.d_nope], k_rope_pre.unsqueeze(0).expand(self.n_heads, -1, -1)), -1)
        capture.attention(self.layer, AttentionCapture(
            q=torch.cat((q_nope, q_rope), -1), k=keys, v=values, weights=weights, head_out=heads,
            q_pre_rope=torch.cat((q_nope, q_rope_pre), -1), k_pre_rope=keys_pre, mask=seen.mask, rule=seen.rule,
            prompts=prompts,
            kv_positions=seen.keys, scale=self.scale, softcap=None, latent=latent, k_rope=k_rope,
            kernel=site.kernel if site else SOFTMAX))
