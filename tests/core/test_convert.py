"""What-if conversions: exact where they must be, honest where they approximate, cancellable."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from explorer.core import convert, what_if
from explorer.core.decode import Decoder
from explorer.core.errors import ExplorerError
from explorer.core.runtime import from_tensors
from tests.core.conftest import make_hf_model

T = 12
IDS = torch.randint(0, 96, (T,), generator=torch.Generator().manual_seed(3))


def load(family: str):
    hf = make_hf_model(family, seed=2)
    return from_tensors(hf.config.to_dict(), hf.state_dict(), name=f"tiny-{family}")


def logits(loaded) -> torch.Tensor:
    with torch.inference_mode():
        return loaded.model.logits(loaded.model(IDS, np.arange(T)))


def relative_gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def test_gqa_with_one_group_per_query_head_is_the_original_exactly():
    gpt2 = load("gpt2")                                        # MHA: pooling groups of one head
    converted = convert.convert(gpt2, "mha")
    assert torch.equal(logits(converted.loaded), logits(gpt2))
    assert converted.relative_error == (0.0, 0.0)


def test_expanding_gqa_back_to_mha_copies_each_kv_head_and_changes_nothing():
    llama = load("llama")                                      # 4 query heads, 2 K/V heads
    converted = convert.to_gqa(llama, 4)
    assert converted.loaded.config.n_kv_heads == 4
    assert relative_gap(logits(converted.loaded), logits(llama)) < 1e-6


def test_mean_pooling_averages_the_heads_of_each_group():
    llama = load("llama")
    converted = convert.to_gqa(llama, 1)
    wk = llama.model.layers[0].attn.wk.weight.view(2, -1, 64)
    assert torch.allclose(converted.loaded.model.layers[0].attn.wk.weight, wk.mean(dim=0))
    assert converted.variant == "mqa" and converted.loaded.config.n_kv_heads == 1
    assert relative_gap(logits(converted.loaded), logits(llama)) > 1e-3   # a real change, before uptraining
    assert all(0 < e < 1 for e in converted.relative_error)
    # the original is untouched and still shares its other weights with the copy
    assert llama.model.layers[0].attn.wk.weight.shape[0] == 2 * 16
    assert converted.loaded.model.embed.weight.data_ptr() == llama.model.embed.weight.data_ptr()


@pytest.mark.parametrize("family", ["gpt2", "llama", "llama_mqa", "qwen2"])
def test_svd_mla_at_full_rank_reproduces_the_logits(family):
    loaded = load(family)
    pairs = loaded.config.d_head // 2 if loaded.config.positional == "rope" else 0   # every frequency kept
    rank = convert.max_mla_rank(loaded.config, pairs)
    converted = convert.to_mla(loaded, rank, pairs)
    assert converted.loaded.config.mla and converted.loaded.config.kv_lora_rank == rank
    assert relative_gap(logits(converted.loaded), logits(loaded)) < 1e-4
    assert max(converted.relative_error) < 1e-6


def test_low_rank_mla_loses_information_and_says_how_much():
    loaded = load("llama")
    converted = convert.to_mla(loaded, 8, 2)
    assert converted.rope_dim == 2 * 2 * 2                       # 2 pairs x 2 dims x 2 K/V heads
    assert all(0.1 < e < 1 for e in converted.relative_error)
    assert relative_gap(logits(converted.loaded), logits(loaded)) > 1e-3


def test_rope_pairs_keep_the_original_frequencies():
    loaded = load("llama")
    converted = convert.to_mla(loaded, 16, 3)
    table = converted.loaded.model.rotaries["global"].inv_freq
    original = loaded.model.rotaries["global"].inv_freq
    assert table.shape == (3 * 2,)
    assert all(bool((original == f).any()) for f in table)


def test_converted_decoder_caches_only_the_latent_and_rope_key():
    loaded = load("llama")
    converted = convert.to_mla(loaded, 12, 2).loaded
    trace = Decoder(converted).prefill(IDS.numpy())
    d_rope = 2 * 2 * 2
    assert trace.kv_bytes_in_use().tolist() == [T * (12 + d_rope) * 4] * 2


@pytest.mark.parametrize("variant, message", [
    ("gqa-3", "do not divide"), ("mla-0", "between 1 and"), ("mla-999", "between 1 and"), ("xyz", "not one of")])
def test_impossible_conversions_are_refused_in_one_sentence(variant, message):
    with pytest.raises(ExplorerError, match=message):
        convert.convert(load("llama"), variant)


@pytest.mark.parametrize("family", ["qwen3", "gemma3", "mistral", "deepseek_v2"])
def test_mla_is_refused_where_a_latent_cannot_hold_the_keys(family):
    with pytest.raises(ExplorerError, match="latent"):
        convert.convert(load(family), "mla-8")


def test_progress_reaches_one_and_cancel_stops():
    loaded = load("llama")
    seen = []
    convert.convert(loaded, "mla-16", progress=lambda fraction, what: seen.append(fraction))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    stop = threading.Event()
    stop.set()
    with pytest.raises(convert.ConversionCancelled):
        convert.convert(loaded, "mqa", cancel=stop)
    calls = iter([False, True])
    with pytest.raises(convert.ConversionCancelled):
        convert.convert(loaded, "gqa-2", cancel=lambda: next(calls))


def test_kl_is_zero_for_an_unconverted_copy_and_positive_for_a_conversion():
    loaded = load("llama")
    same = what_if.compare(Decoder(loaded), Decoder(loaded), steps=5, prompt_ids=IDS.numpy())
    assert len(same) == 5 and [r.step for r in same] == list(range(5))
    assert all(r.kl == 0.0 and r.top1_agrees and r.bytes_saved == 0 for r in same)
    mqa = convert.convert(loaded, "mqa").loaded
    rows = what_if.compare(Decoder(loaded), Decoder(mqa), steps=4, prompt_ids=IDS.numpy())
    assert all(r.kl > 0 for r in rows)
    per_token = 2 * (2 - 1) * 16 * 2 * 4                         # one K/V head fewer, K and V, 2 layers, float32
    assert [r.bytes_saved for r in rows] == [(T + i) * per_token for i in range(4)]
    assert [r.position for r in rows] == [T - 1 + i for i in range(4)]


def test_compare_feeds_the_originals_tokens_to_both():
    loaded = load("llama")
    original, converted = Decoder(loaded), Decoder(convert.to_mla(loaded, 4, 1).loaded)
    rows = what_if.compare(original, converted, steps=4, prompt_ids=IDS.numpy())
    assert np.array_equal(original.trace.token_ids, converted.trace.token_ids)
    assert [r.token_id for r in rows[:-1]] == original.trace.token_ids[T:].tolist()


def test_kl_divergence_matches_the_definition():
    p, q = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    pp, qq = np.exp(p) / np.exp(p).sum(), np.exp(q) / np.exp(q).sum()
    assert what_if.kl_divergence(p, q) == pytest.approx(float((pp * np.log(pp / qq)).sum()))
    assert what_if.kl_divergence(p, p) == 0.0


def test_compare_needs_the_same_prompt():
    loaded = load("llama")
    a, b = Decoder(loaded), Decoder(loaded)
    a.prefill(IDS.numpy())
    b.prefill(IDS.numpy()[:-1])
    with pytest.raises(ExplorerError, match="same prompt"):
        what_if.compare(a, b, steps=2)


def test_what_if_returns_both_traces_and_reports_progress():
    loaded = load("llama")
    seen = []
    result = what_if.what_if(loaded, "gqa-1", IDS.numpy(), steps=3, progress=lambda f, what: seen.append(f))
    assert result.variant == "mqa" and len(result.comparisons) == 3
    assert result.original.n_tokens == result.converted.n_tokens == T + 2
    assert result.converted.model.n_kv_heads == 1 and result.original.model.n_kv_heads == 2
    assert seen == sorted(seen) and seen[-1] == 1.0


@pytest.mark.parametrize("family", ["llama", "llama_mqa", "mistral", "qwen2", "qwen3", "gpt2", "gemma3"])
def test_an_mla_target_is_offered_exactly_where_the_conversion_makes_it(family):
    """The KV lab offers the MLA ranks of its table that the conversion accepts, and says why it offers none: a
    Qwen3 (its keys normalised per head) was offered MLA targets the conversion then refused, and a sliding-window
    Gemma listed MLA rows and offered none without a word (drive26). Expectation: convert.convert itself."""
    from explorer.core import conversion_targets as targets
    from explorer.core import kv_variants as kv

    loaded = load(family)
    rows = kv.info_comparison(loaded.info, 64)
    offered = set(targets.what_if_targets(loaded.info, rows))
    mla = [row.variant.name for row in rows if row.variant.kind == "mla"]
    assert mla, f"{family}: the table lists no MLA variant"
    converts = []
    for name in mla:
        try:
            convert.convert(load(family), name)
            converts.append(name)
        except ExplorerError as error:
            assert name not in offered, f"{name} is offered for {family} and refused: {error}"
    assert set(converts) <= offered, f"{family}: {set(converts) - offered} convert but are not offered"
    said = targets.why_no_mla(loaded.info, rows)
    assert bool(said) == (not converts), f"{family}: converts {converts}, the panel says {said!r}"
