"""The logit lens feeds only the asked position, against the KV cache cut before it: at a long prompt it
equals transformers' own hidden states put through the final norm and W_U, for every cache kind (per-head,
a sliding ring, MLA's latent), and it leaves the decoder's cache and trace as they were."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core import logit_lens
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.errors import ExplorerError
from explorer.core.runtime import from_tensors
from tests.core.conftest import LONG_LLAMA_TOKENS, make_hf_model

N = LONG_LLAMA_TOKENS


def reference_lens(hf_model, ids: np.ndarray, position: int, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """softmax(norm(h_l) W_U) at `position` after each layer, from transformers' output_hidden_states (its
    last entry is already normed), with the final soft-cap where the model has one: ids, probs (L, k)."""
    with torch.no_grad():
        out = hf_model(torch.as_tensor(ids[: position + 1])[None], output_hidden_states=True)
        hidden = out.hidden_states[1:]                                          # per layer (1, p + 1, d)
        norm = hf_model.transformer.ln_f if hasattr(hf_model, "transformer") else hf_model.model.norm
        rows = torch.stack([norm(h[0, -1]) for h in hidden[:-1]] + [hidden[-1][0, -1]])   # (L, d)
        logits = hf_model.lm_head(rows)                                         # (L, V)
        cap = getattr(hf_model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        probs, top = torch.softmax(logits.double(), dim=-1).topk(k, dim=-1)
    return top.numpy(), probs.numpy()


def assert_lens_equal(got, expected) -> None:
    (ids, probs), (want_ids, want_probs) = got, expected
    np.testing.assert_allclose(probs, want_probs, atol=2e-5)
    distinct = np.abs(np.diff(want_probs, axis=1)) > 1e-5                       # ties may swap places
    assert (ids[:, :-1] == want_ids[:, :-1])[distinct].all() and ids.shape == want_ids.shape


@pytest.mark.parametrize("position", [0, 1500, 2999])
def test_the_lens_at_a_long_prompt_equals_the_hidden_states_of_transformers(long_llama, position):
    hf_model, decoder, ids = long_llama
    trace, length = decoder.trace, decoder.kv_cache.length
    assert trace.steps[0].layers[0].attn.on_demand                              # a long prompt: maps on demand
    assert_lens_equal(decoder.logit_lens(position, 5), reference_lens(hf_model, ids, position))
    assert decoder.trace is trace and decoder.kv_cache.length == length == N    # nothing written


def test_the_lens_feeds_one_row_through_the_cache(long_llama, monkeypatch):
    """One new token goes through the blocks (not the prefix of 5,000), and no attention map is recorded."""
    _, decoder, _ = long_llama
    fed = []
    forward = decoder.model.forward

    def spy(ids, positions, cache=None, capture=None, intervention=None):
        fed.append((len(ids), cache is not None, capture.weights))
        return forward(ids, positions, cache, capture, intervention)

    monkeypatch.setattr(decoder.model, "forward", spy)
    decoder.logit_lens(5000, 3)
    assert fed == [(1, True, False)]


def test_the_lens_after_a_decoding_step_reads_the_steps_position_and_the_prompts(long_llama):
    hf_model, _, ids = long_llama
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=2100), hf_model.state_dict())
    decoder = Decoder(loaded, RecordOptions(), capacity=2100)
    decoder.prefill(ids[:2000])
    trace = decoder.step()
    every = trace.token_ids
    for position in (2000, 1200):
        assert_lens_equal(decoder.logit_lens(position, 4), reference_lens(hf_model, every, position, 4))
    with pytest.raises(ExplorerError, match="2001"):
        decoder.logit_lens(2001)


@pytest.mark.parametrize("family", ["mistral", "gemma3", "deepseek_v3", "gpt2"])
def test_every_cache_kind_gives_transformers_lens(family):
    """Mistral and Gemma 3's sliding rings (a wrapped ring serves the last position; an earlier one runs its
    prefix), MLA's latent cache, GPT-2's learned positions."""
    hf_model = make_hf_model(family)
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    decoder = Decoder(loaded, RecordOptions(), capacity=64)
    ids = (np.arange(40) * 5 + 1) % 96
    decoder.prefill(ids)
    views = [logit_lens.prefix_view(layer, 39) for layer in decoder.kv_cache.layers]
    assert all(view is not None for view in views)                               # the last position: the cache
    for position in (39, 20, 0):
        assert_lens_equal(decoder.logit_lens(position, 5), reference_lens(hf_model, ids, position))
