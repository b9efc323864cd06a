"""The BERT encoder against transformers' BertModel: attention and hidden states, tiny random and MiniLM."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers  # the reference

from explorer.core import encoder
from explorer.core.errors import ExplorerError, ModelLoadError, UnsupportedModelError
from explorer.core.runtime import LoadedModel

TINY = dict(vocab_size=96, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
            max_position_embeddings=32, type_vocab_size=2)


def tiny_bert(seed: int = 0):
    """A random BertModel whose weights are spread wide enough that attention is far from uniform."""
    torch.manual_seed(seed)
    model = transformers.BertModel._from_config(transformers.BertConfig(**TINY), attn_implementation="eager")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            noise = torch.randn(tensor.shape, generator=generator)
            base = 1.0 if name.endswith("LayerNorm.weight") else 0.0
            tensor.copy_(base + (0.1 if "LayerNorm" in name else 0.3) * noise)
    return model.eval()


def runner_for(hf_model, tokenizer=None) -> encoder.EncoderRunner:
    model, config = encoder.build(hf_model.config.to_dict(), hf_model.state_dict(), source="tiny-bert")
    loaded = LoadedModel(model=model, config=config, tokenizer=tokenizer,
                         info=encoder.model_info(model, config, "tiny-bert"), name="tiny-bert")
    return encoder.EncoderRunner(loaded)


def assert_matches_bert(hf_model, runner, ids: np.ndarray, attn_tol=1e-5, hidden_tol=1e-4) -> None:
    trace = runner.prefill(ids)
    with torch.no_grad():
        reference = hf_model(torch.as_tensor(ids)[None], output_attentions=True)
        ours = runner.model(torch.as_tensor(ids)[None])
    for layer, expected in enumerate(reference.attentions):
        np.testing.assert_allclose(trace.attention(layer), expected[0].numpy(), atol=attn_tol, rtol=0)
    np.testing.assert_allclose(ours[0].numpy(), reference.last_hidden_state[0].numpy(), atol=hidden_tol, rtol=0)


def test_tiny_random_bert_matches_transformers():
    hf_model = tiny_bert()
    ids = np.random.default_rng(0).integers(0, TINY["vocab_size"], size=11)
    assert_matches_bert(hf_model, runner_for(hf_model), ids)


def test_the_trace_holds_one_encode_step_with_full_masks_and_no_cache():
    hf_model = tiny_bert(1)
    runner = runner_for(hf_model)
    trace = runner.prefill(np.arange(7))
    assert trace.n_steps == 1 and trace.steps[0].kind == "encode" and trace.encoder is trace.steps[0]
    assert trace.model.is_encoder_only and not runner.can_generate
    for layer in range(TINY["num_hidden_layers"]):
        assert trace.mask(layer).shape == (7, 7) and trace.mask(layer).all()
        weights = trace.attention(layer)                                        # (H, 7, 7)
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
        assert (np.triu(weights[0], 1) > 0).any()                               # later tokens are seen too
        assert trace.k(layer, 0).shape == (7, TINY["hidden_size"] // TINY["num_attention_heads"])
    assert trace.kv_bytes_in_use().tolist() == [0, 0] and runner.kv_cache.bytes_allocated() == [0, 0]
    assert trace.steps[0].top_ids.shape == (7, 0)


def test_an_encoder_refuses_to_step_with_a_reason():
    runner = runner_for(tiny_bert())
    runner.prefill(np.arange(3))
    with pytest.raises(ExplorerError, match="encoder-only"):
        runner.step()
    with pytest.raises(ExplorerError, match="no next token"):
        runner.force(1)
    assert runner.back().n_steps == 1


def test_bad_input_raises_one_sentence_errors():
    runner = runner_for(tiny_bert())
    with pytest.raises(ExplorerError, match="empty"):
        runner.prefill([])
    with pytest.raises(ExplorerError, match="outside the vocabulary"):
        runner.prefill([1, 500])
    with pytest.raises(ExplorerError, match="more than the model's 32 positions"):
        runner.prefill(np.zeros(40, dtype=np.int64))


def test_checkpoint_names_are_checked():
    hf_model = tiny_bert()
    tensors = dict(hf_model.state_dict())
    config = hf_model.config.to_dict()
    with pytest.raises(ModelLoadError, match="'encoder.layer.0.attention.self.rotary.weight' is not part of a BERT"):
        encoder.build(config, {**tensors, "encoder.layer.0.attention.self.rotary.weight": torch.zeros(2)}, "tiny")
    del tensors["encoder.layer.1.output.dense.weight"]
    with pytest.raises(ModelLoadError, match="tiny lacks the weight layers.1.ffn.w_out.weight"):
        encoder.build(config, tensors, "tiny")
    prefixed = {f"bert.{name}": t for name, t in hf_model.state_dict().items()}   # BertForMaskedLM style
    encoder.build(config, prefixed, "tiny")
    with pytest.raises(UnsupportedModelError, match="relative_key"):
        encoder.bert_config({**config, "position_embedding_type": "relative_key"})


@pytest.mark.realmodel
def test_minilm_matches_transformers_bert(minilm_folder):
    from explorer.core.loaders import open_checkpoint

    checkpoint = open_checkpoint(minilm_folder)
    loaded = encoder.load(checkpoint)
    tokens = checkpoint.tokenizer.encode("The cat sat on the mat, and the dog barked at it.")
    assert tokens.text[0] == "[CLS]" and tokens.text[-1] == "[SEP]" and len(tokens) == 16   # no padding to 128
    assert loaded.info.n_layers == 6 and loaded.info.n_heads == 12 and loaded.info.is_encoder_only
    reference = transformers.BertModel.from_pretrained(minilm_folder, attn_implementation="eager").eval()
    assert_matches_bert(reference, encoder.EncoderRunner(loaded), tokens.ids)


@pytest.mark.realmodel
@pytest.mark.parametrize("change, words", [
    ({"num_attention_heads": 5}, "the 5 heads must divide hidden_size 384"),
    ({"max_position_embeddings": -1}, "max_position_embeddings = -1 is not legal"),
    ({"hidden_act": "swishy"}, "hidden_act = 'swishy' is not legal"),
    ({"layer_norm_eps": 0}, "layer_norm_eps = 0 is not legal"),
    ({"vocab_size": 0}, "vocab_size = 0 is not legal: it must be at least 1 for a model to run"),
    # type_vocab_size was read past the schema: 0 failed as a weight's shape, 10**12 asked for a 1.5 TB table
    ({"type_vocab_size": 0}, "type_vocab_size = 0 is not legal"),
    ({"type_vocab_size": 10**12}, "type_vocab_size = 1000000000000 is not legal"),
])
def test_a_bert_config_is_checked_as_every_family_s_is(minilm_folder, tmp_path, change, words):
    """BERT's config skipped the checks every other family's goes through: heads that do not divide the width, a
    negative context or an unknown activation ended in a traceback through the API and an internal error in the app
    (boundary27). MiniLM's own folder, its config.json changed in one field."""
    import json

    import explorer

    folder = tmp_path / "minilm"
    folder.mkdir()
    for part in minilm_folder.iterdir():
        if part.name != "config.json":
            (folder / part.name).symlink_to(part)
    config = json.loads((minilm_folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(ExplorerError) as caught:
        explorer.load(folder)
    assert words in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
    assert str(caught.value).startswith(f"{folder / 'config.json'}: "), "the file is named, as a decoder's is"
