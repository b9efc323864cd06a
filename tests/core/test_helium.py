"""Helium, added as one family row (explorer/core/families.py) with its config reader (read_helium): Llama's
blocks whose RoPE rotates neighbouring pairs, which the engine already had as a ModelConfig field
(rope_interleave, DeepSeek's). A tiny random HeliumForCausalLM saved by transformers is opened from its folder;
its logits, every layer's attention map and several decoding steps through the KV cache match transformers'
eager model in float32, and save_hf writes it back as transformers reads it."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers  # the reference

from explorer.core.capture import StepCapture
from explorer.core.decode import Decoder
from explorer.core.runtime import load_model
from tests.core.conftest import BASE, randomize
from tests.core.tiny_checkpoints import byte_level_tokenizer

T = 12
STEPS = 3
TOKENIZER = byte_level_tokenizer()
VOCAB = TOKENIZER.get_vocab_size()


def tiny_helium(**overrides):
    """A random Helium; HeliumAttention's o_proj takes hidden_size inputs, so N_Q d_h = d_model (4 x 16)."""
    config = transformers.HeliumConfig(**{**BASE, "vocab_size": VOCAB, "num_key_value_heads": 2, "head_dim": 16,
                                          "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
                                          "rope_parameters": {"rope_type": "default", "rope_theta": 50.0},
                                          **overrides})
    torch.manual_seed(0)
    model = transformers.HeliumForCausalLM._from_config(config, attn_implementation="eager")
    randomize(model, 0)
    return model.eval()


def _saved_and_opened(hf, folder):
    hf.save_pretrained(folder)
    TOKENIZER.save(str(folder / "tokenizer.json"))
    return load_model(folder)


@pytest.mark.parametrize("overrides", [{}, {"num_key_value_heads": 4, "attention_bias": True}],
                         ids=["gqa", "mha-bias"])
def test_helium_logits_and_attention_match_transformers(tmp_path, overrides):
    hf = tiny_helium(**overrides)
    loaded = _saved_and_opened(hf, tmp_path / "helium")
    assert loaded.config.family == "helium"
    assert (loaded.config.qkv_bias, loaded.config.o_bias) == (hf.config.attention_bias, False)
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


def test_helium_decoding_steps_from_the_cache_match_transformers(tmp_path):
    """Prefill T tokens, then STEPS greedy steps through the KV cache: each step's logits and attention row are
    transformers' given its own cache (past_key_values) and the same fed token."""
    hf = tiny_helium()
    loaded = _saved_and_opened(hf, tmp_path / "helium")
    ids = np.random.default_rng(2).integers(0, VOCAB, T)
    decoder = Decoder(loaded)
    decoder.prefill(ids)
    with torch.inference_mode():
        cache = hf(torch.as_tensor(ids)[None], use_cache=True).past_key_values
        for step in range(STEPS):
            decoder.step()
            position = T + step
            fed = int(decoder.trace.token_ids[position])
            out = hf(torch.tensor([[fed]]), cache=cache, use_cache=True, output_attentions=True)
            cache = out.past_key_values
            assert decoder.trace.steps[-1].n_new == 1
            reference = out.logits[0, -1].numpy()
            assert np.abs(decoder.logits_at(position) - reference).max() / np.abs(reference).max() < 1e-5, step
            for layer, attention in enumerate(out.attentions):
                np.testing.assert_allclose(decoder.trace.attention(layer)[:, position], attention[0, :, 0].numpy(),
                                           atol=1e-5, err_msg=f"step {step} layer {layer}")


def test_a_helium_is_saved_as_transformers_reads_it(tmp_path):
    """The row's writing column: save_hf's folder is a HeliumForCausalLM with the same logits."""
    import explorer
    from tests.api.test_save_hf import PROMPT, hf_logits, relative_error

    model = explorer.Model(_saved_and_opened(tiny_helium(attention_bias=True), tmp_path / "in"))
    run = model.run(PROMPT)
    model.save_hf(tmp_path / "out")
    written = transformers.AutoConfig.from_pretrained(tmp_path / "out")
    assert written.model_type == "helium" and written.attention_bias is True
    assert relative_error(run.logits, hf_logits(tmp_path / "out", run.ids)) < 1e-4
