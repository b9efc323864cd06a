"""The residual stream and Show the work for a block read one position through the decoder's KV cache (one
token through L blocks, like the logit lens): at 8,000 tokens their rows equal transformers' hidden states and
the prefix run they replace, the cache and trace stay as they were, and a decoder that ran other ids (or an
intervention) is not read."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.attribution import reads_cache, residual_stream
from explorer.core.block_walk import walk_block
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.runtime import from_tensors
from tests.core.conftest import make_hf_model
from tests.core.test_logit_lens_one_row import assert_lens_equal, reference_lens

FIELDS = ("attn_norms", "ffn_norms", "residual_norms", "lens_probs")


def hf_hidden(hf_model, ids: np.ndarray, position: int) -> np.ndarray:
    """transformers' h_0 .. h_L at `position` (the last one already through the final norm): (L + 1, d)."""
    with torch.no_grad():
        out = hf_model(torch.as_tensor(ids[: position + 1])[None], output_hidden_states=True)
    return torch.stack([h[0, -1] for h in out.hidden_states]).double().numpy()


def fed_rows(decoder, monkeypatch) -> list:
    """(tokens fed, a cache given) of every forward pass of the decoder's model from now on."""
    fed, forward = [], decoder.model.forward

    def spy(ids, positions, cache=None, capture=None, intervention=None):
        fed.append((len(ids), cache is not None))
        return forward(ids, positions, cache, capture, intervention)

    monkeypatch.setattr(decoder.model, "forward", spy)
    return fed


def assert_streams_equal(got, want) -> None:
    assert got.position == want.position
    for name in FIELDS:
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-4, atol=1e-5)
    assert_lens_equal((got.lens_ids, got.lens_probs), (want.lens_ids, want.lens_probs))


def test_the_stream_at_8000_tokens_is_one_row_and_equals_transformers_and_the_prefix(long_llama, monkeypatch):
    hf_model, decoder, ids = long_llama
    loaded, position = decoder.loaded, 2999
    trace, length = decoder.trace, decoder.kv_cache.length
    keys = decoder.kv_cache.layers[0].buffers[0].narrow(1, 0, length).clone()
    fed = fed_rows(decoder, monkeypatch)
    got = residual_stream(loaded, ids, position, 5, decoder=decoder)
    assert fed == [(1, True)]                                                   # one token, through the cache
    hidden = hf_hidden(hf_model, ids, position)                                 # (L + 1, d)
    np.testing.assert_allclose(got.residual_norms[:-1], np.linalg.norm(hidden[1:-1], axis=1), rtol=1e-4)
    assert_lens_equal((got.lens_ids, got.lens_probs), reference_lens(hf_model, ids, position))
    fed.clear()
    assert_streams_equal(got, residual_stream(loaded, ids, position, 5))       # the prefix run it replaces
    # the prefix into its own cache (in chunks, each a point where a Cancel is heard), then the row itself
    assert sum(n for n, _ in fed[:-1]) == position and all(cache for _, cache in fed) and fed[-1] == (1, True)
    assert decoder.trace is trace and decoder.kv_cache.length == length
    assert torch.equal(decoder.kv_cache.layers[0].buffers[0].narrow(1, 0, length), keys)


def test_the_last_position_of_8000_is_read_through_the_cache_too(long_llama, monkeypatch):
    hf_model, decoder, ids = long_llama
    fed = fed_rows(decoder, monkeypatch)
    got = residual_stream(decoder.loaded, ids, len(ids) - 1, 3, decoder=decoder)
    assert fed == [(1, True)] and got.position == len(ids) - 1
    assert_lens_equal((got.lens_ids, got.lens_probs), reference_lens(hf_model, ids, len(ids) - 1, 3))


def test_the_block_walk_at_8000_tokens_reads_one_row_equal_to_transformers(long_llama, monkeypatch):
    hf_model, decoder, ids = long_llama
    layer, position = 0, 2500
    fed = fed_rows(decoder, monkeypatch)
    got = walk_block(decoder.loaded, ids, layer, position, decoder=decoder)
    assert fed == [(1, True)] and got.position == position and got.max_delta < 1e-4
    hidden = hf_hidden(hf_model, ids, position)
    np.testing.assert_allclose(got.h_in, hidden[layer], atol=1e-5)
    np.testing.assert_allclose(got.h_out, hidden[layer + 1], atol=1e-4)
    want = walk_block(decoder.loaded, ids, layer, position)                     # the prefix run
    for name in ("h_in", "attn_out", "h_mid", "ffn_out", "h_out"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), atol=1e-5)
    assert [n.index for n in got.neurons[:3]] == [n.index for n in want.neurons[:3]]


def test_a_decoder_that_ran_other_ids_or_an_intervention_is_not_read(long_llama, monkeypatch):
    _, decoder, ids = long_llama
    other = ids.copy()
    other[100] = (other[100] + 1) % 96
    assert reads_cache(decoder, decoder.loaded, ids, 200) and not reads_cache(decoder, decoder.loaded, other, 200)
    assert reads_cache(decoder, decoder.loaded, other, 99)                      # the prefix before it still is
    assert not reads_cache(None, decoder.loaded, ids, 200)
    monkeypatch.setattr(decoder, "_intervened", object())
    assert not reads_cache(decoder, decoder.loaded, ids, 200)


def test_a_changed_prompt_runs_its_own_prefix_and_equals_transformers(long_llama):
    hf_model, decoder, ids = long_llama
    other = ids[:600].copy()
    other[100] = (other[100] + 1) % 96
    got = residual_stream(decoder.loaded, other, 599, 5, decoder=decoder)
    assert_lens_equal((got.lens_ids, got.lens_probs), reference_lens(hf_model, other, 599))


@pytest.mark.parametrize("family", ["mistral", "gemma3", "deepseek_v3", "gpt2"])
def test_every_cache_kind_gives_the_prefix_runs_stream(family):
    """Sliding rings (a wrapped one falls back to the prefix), MLA's latent cache, GPT-2's learned positions."""
    hf_model = make_hf_model(family)
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    decoder = Decoder(loaded, RecordOptions(), capacity=64)
    ids = (np.arange(40) * 5 + 1) % 96
    decoder.prefill(ids)
    for position in (39, 20, 0):
        assert_streams_equal(residual_stream(loaded, ids, position, 5, decoder=decoder),
                             residual_stream(loaded, ids, position, 5))
        got, want = walk_block(loaded, ids, 1, position, decoder=decoder), walk_block(loaded, ids, 1, position)
        np.testing.assert_allclose(got.h_out, want.h_out, atol=1e-5)
