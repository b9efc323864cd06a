"""What a what-if conversion says it does: to MHA from GQA it replicates K/V heads (exact) and the cache grows,
to fewer K/V heads it mean-pools them, to MLA it factors K/V at a low rank. Drive 15 read "29% mean-pooling K/V
heads" and "cache saved -1.85 MiB" while SmolLM2 was converted to MHA."""
from __future__ import annotations

import pytest
import torch

from explorer.core import kv_variants as kv
from explorer.core import what_if
from explorer.core.runtime import from_tensors
from tests.core.conftest import make_hf_model

T, STEPS = 10, 3
IDS = torch.randint(0, 96, (T,), generator=torch.Generator().manual_seed(5)).numpy()
FLOAT32 = 4                                       # bytes: the engine computes and caches in float32


@pytest.fixture(scope="module")
def llama():
    """A tiny Llama with grouped K/V heads, and its Hugging Face config (the independent source of its sizes)."""
    hf = make_hf_model("llama", seed=4)
    assert hf.config.num_key_value_heads < hf.config.num_attention_heads, "the test needs a GQA model"
    return from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama"), hf.config


def conversion_stages(loaded, variant: str) -> tuple[set[str], what_if.WhatIf]:
    """The words the progress said while converting (not while decoding, not "done"), and the result."""
    said = []
    result = what_if.what_if(loaded, variant, IDS, steps=STEPS, progress=lambda f, what: said.append((f, what)))
    return {what for f, what in said if f < 0.3 and what != "done"}, result


def test_to_mha_says_replicating_never_pooling(llama):
    stages, result = conversion_stages(llama[0], "mha")
    assert stages and all("replicat" in what and "pool" not in what for what in stages), stages
    assert all(row.kl < 1e-8 for row in result.comparisons)   # replication is exact: nothing was averaged


@pytest.mark.parametrize("variant, word", [("mqa", "mean-pooling"), ("mla-16", "low-rank")])
def test_other_targets_name_their_own_work(llama, variant, word):
    stages, _ = conversion_stages(llama[0], variant)
    assert stages and all(word in what and "replicat" not in what for what in stages), stages


def test_to_mha_the_cache_grows_by_the_added_heads_and_is_said_to_grow(llama):
    loaded, hf = llama
    _, result = conversion_stages(loaded, "mha")
    d_head = hf.hidden_size // hf.num_attention_heads
    tokens = T + STEPS - 1                        # the prompt, then one token fed per step after the first
    added = hf.num_attention_heads - hf.num_key_value_heads
    grows = hf.num_hidden_layers * tokens * 2 * added * d_head * FLOAT32   # K and V of every added head
    last = result.comparisons[-1]
    assert last.converted_bytes - last.original_bytes == grows
    said = kv.cache_change(last.original_bytes, last.converted_bytes)
    assert said == f"cache grows by {grows / 1024:.2f} KiB", said
    assert "saved" not in said and "-" not in said


def test_cache_change_words():
    assert kv.cache_change(3 * 1024, 1024) == "cache saved 2.00 KiB"
    assert kv.cache_change(1024, 3 * 1024) == "cache grows by 2.00 KiB"
    assert kv.cache_change(512, 512) == "cache unchanged"


@pytest.mark.parametrize("n_kv, target, word", [
    (3, 9, "replicating K/V heads"),              # SmolLM2 to MHA: each K/V head copied to its 3 query heads
    (3, 1, "mean-pooling K/V heads"),             # to MQA
    (4, 2, "mean-pooling K/V heads"),
    (2, 3, "replicating and mean-pooling K/V heads"),   # 6 query heads: the middle group straddles two heads
    (3, None, "low-rank factoring K/V (SVD)"),
])
def test_conversion_work_by_head_counts(n_kv, target, word):
    assert kv.conversion_work(n_kv, target) == word
