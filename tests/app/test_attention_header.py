"""The Attention header names what the map is made of: a GQA head's shared K/V head (N_Q / N_KV query heads to
one), and for MLA, whose every head has its own K and V brought up from one latent, that latent and its width, not
a "K/V head" (a drive read "head 5 (K/V head 5), N_KV = 6" for MLA, true of no cache it holds)."""
from __future__ import annotations

from explorer.app.panels.attention_header import attention_formula
from tests.app.synthetic_trace import build_trace


def test_a_gqa_head_names_the_kv_head_it_reads():
    trace = build_trace(n_heads=6, n_kv_heads=2)
    for head in range(6):
        header = attention_formula(trace, "self", "weights", 0, head, (6, 6))
        assert f"head {head} (K/V head {head // 3})," in header and "N_{KV} = 2" in header, header


def test_an_mla_head_names_its_latent_and_no_shared_kv_head():
    trace = build_trace(n_heads=4, mla_rank=8)
    header = attention_formula(trace, "self", "weights", 1, 2, (6, 6))
    assert "K/V head" not in header and "N_{KV}" not in header, header
    assert "c_{KV}" in header and "d_c = 8" in header and "N_Q = 4" in header, header
