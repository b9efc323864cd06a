"""Seed-OSS, added as one family row (explorer/core/families.py) and one config reader (read_seed_oss): a tiny
random SeedOssForCausalLM saved by transformers is opened from its folder, and its logits, attention maps and
one cached decoding step match transformers' eager model in float32; save_hf writes it back as transformers
reads it. The steps this addition took are docs/formats.md's "Adding a family"."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from explorer.core.capture import StepCapture
from explorer.core.decode import Decoder
from explorer.core.runtime import load_model
from tests.core.conftest import BASE, randomize
from tests.core.tiny_checkpoints import byte_level_tokenizer

T = 12
TOKENIZER = byte_level_tokenizer()
VOCAB = TOKENIZER.get_vocab_size()


def tiny_seed_oss(**overrides):
    """A random Seed-OSS whose q/k/v carry a bias (attention_bias) and, where asked, o too (attention_out_bias)."""
    config = transformers.SeedOssConfig(**{**BASE, "vocab_size": VOCAB, "num_key_value_heads": 2, "head_dim": 24,
                                           "pad_token_id": 0, "attention_dropout": 0.0, "residual_dropout": 0.0,
                                           **overrides})
    torch.manual_seed(0)
    model = transformers.SeedOssForCausalLM._from_config(config, attn_implementation="eager")
    randomize(model, 0)
    return model.eval()


def _saved_and_opened(hf, folder):
    hf.save_pretrained(folder)
    TOKENIZER.save(str(folder / "tokenizer.json"))
    return load_model(folder)


@pytest.mark.parametrize("out_bias", [False, True])
def test_seed_oss_logits_and_attention_match_transformers(tmp_path, out_bias):
    hf = tiny_seed_oss(attention_out_bias=out_bias)
    loaded = _saved_and_opened(hf, tmp_path / "seed-oss")
    assert (loaded.config.qkv_bias, loaded.config.o_bias) == (True, out_bias)
    assert loaded.config.d_head == 24 != BASE["hidden_size"] // BASE["num_attention_heads"]
    ids = torch.randint(0, VOCAB, (T,), generator=torch.Generator().manual_seed(1))
    capture = StepCapture(loaded.config.n_layers)
    with torch.inference_mode():
        out = hf(ids[None], output_attentions=True)
        logits = loaded.model.logits(loaded.model(ids, np.arange(T), None, capture))
    reference = out.logits[0]
    assert ((logits - reference).abs().max() / reference.abs().max()).item() < 1e-5
    for layer, attention in enumerate(out.attentions):
        assert capture.layers[layer].attn.weights.shape == attention[0].shape
        assert (capture.layers[layer].attn.weights - attention[0]).abs().max().item() < 1e-5, f"layer {layer}"


def test_a_seed_oss_decoding_step_from_the_cache_matches_transformers(tmp_path):
    """Prefill T tokens, then one greedy step through the KV cache: the step's logits and attention row are
    transformers' with its own cache (past_key_values)."""
    hf = tiny_seed_oss(attention_out_bias=True)
    loaded = _saved_and_opened(hf, tmp_path / "seed-oss")
    ids = np.random.default_rng(2).integers(0, VOCAB, T)
    decoder = Decoder(loaded)
    decoder.prefill(ids)
    decoder.step()                                  # feeds the prompt's greedy next token through the cache
    fed = int(decoder.trace.token_ids[T])
    with torch.inference_mode():
        prefix = hf(torch.as_tensor(ids)[None], use_cache=True)
        step = hf(torch.tensor([[fed]]), cache=prefix.past_key_values, output_attentions=True)
    assert step.logits.shape[1] == 1 and decoder.trace.steps[-1].n_new == 1
    reference = step.logits[0, -1].numpy()
    assert np.abs(decoder.logits_at(T) - reference).max() / np.abs(reference).max() < 1e-5
    for layer, attention in enumerate(step.attentions):
        np.testing.assert_allclose(decoder.trace.attention(layer)[:, T], attention[0, :, 0].numpy(), atol=1e-5)


def test_a_seed_oss_is_saved_as_transformers_reads_it(tmp_path):
    """The row's writing column: save_hf's folder is a SeedOssForCausalLM with the same logits."""
    import explorer
    from tests.api.test_save_hf import PROMPT, hf_logits, relative_error

    model = explorer.Model(_saved_and_opened(tiny_seed_oss(attention_out_bias=True), tmp_path / "in"))
    run = model.run(PROMPT)
    model.save_hf(tmp_path / "out")
    assert transformers.AutoConfig.from_pretrained(tmp_path / "out").attention_out_bias is True
    assert relative_error(run.logits, hf_logits(tmp_path / "out", run.ids)) < 1e-4
