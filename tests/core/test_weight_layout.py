"""Weights in the model's own memory are stored by columns (W^T contiguous) for faster products; the numbers
are the checkpoint's, nothing is held twice, and memory-mapped or float16 weights stay as stored."""
from __future__ import annotations

import torch

from explorer.core.runtime import from_tensors, load_model
from tests.core.tiny_checkpoints import LLAMA_CONFIG as _LLAMA
from tests.core.tiny_checkpoints import llama_tensors, write_hf_folder

LLAMA_CONFIG = dict(_LLAMA, vocab_size=320)

LINEARS = ("attn.wq", "attn.wk", "attn.wv", "attn.wo", "ffn.w_gate", "ffn.w_up", "ffn.w_down")


def _by_columns(weight: torch.Tensor) -> bool:
    """W (out, in) whose column entries are adjacent: W^T (in, out) is (a slice of) a contiguous matrix."""
    return weight.dim() == 2 and weight.stride(0) == 1 and weight.stride(1) >= weight.shape[0]


def _built(dtype: str = "float32"):
    tensors = llama_tensors(LLAMA_CONFIG)
    return from_tensors(LLAMA_CONFIG, {k: v.clone() for k, v in tensors.items()}, dtype=dtype), tensors


def test_owned_float32_weights_are_stored_by_columns_with_the_checkpoints_numbers():
    loaded, tensors = _built()
    model = loaded.model
    for block in model.layers:
        for name in LINEARS:
            weight = block.get_submodule(name).weight
            assert _by_columns(weight), (name, weight.stride())
    assert _by_columns(model.lm_head.weight)
    hf = {"attn.wq": "self_attn.q_proj", "attn.wo": "self_attn.o_proj", "ffn.w_down": "mlp.down_proj",
          "ffn.w_up": "mlp.up_proj"}
    for ours, theirs in hf.items():
        torch.testing.assert_close(model.layers[0].get_submodule(ours).weight,
                                   tensors[f"model.layers.0.{theirs}.weight"], rtol=0, atol=0)
    torch.testing.assert_close(model.embed.weight, tensors["model.embed_tokens.weight"], rtol=0, atol=0)


def test_nothing_is_held_twice():
    loaded, _ = _built()
    params = {id(p): p for p in loaded.model.parameters()}.values()
    storages = {p.untyped_storage().data_ptr(): p.untyped_storage().nbytes() for p in params}
    assert sum(storages.values()) == sum(p.numel() * p.element_size() for p in params)


def test_tied_embedding_stays_the_unembedding():
    config = dict(LLAMA_CONFIG, tie_word_embeddings=True)
    tensors = {k: v for k, v in llama_tensors(config).items() if k != "lm_head.weight"}
    model = from_tensors(config, tensors).model
    assert model.lm_head.weight is model.embed.weight
    ids = torch.tensor([3, 1, 4])
    torch.testing.assert_close(model.embed(ids), tensors["model.embed_tokens.weight"][ids], rtol=0, atol=0)


def test_float16_weights_are_left_as_stored():
    loaded, _ = _built("float16")
    assert loaded.model.layers[0].attn.wo.weight.is_contiguous()


def test_memory_mapped_weights_are_not_copied(tmp_path):
    write_hf_folder(tmp_path / "m")
    model = load_model(tmp_path / "m").model
    file_bytes = (tmp_path / "m" / "model.safetensors").stat().st_size
    weight = model.layers[0].attn.wo.weight
    assert weight.is_contiguous()
    assert weight.untyped_storage().nbytes() == file_bytes             # still a view of the file's mapping


def test_a_handed_over_dict_is_emptied_and_builds_the_same_model():
    tensors = llama_tensors(LLAMA_CONFIG)
    kept = from_tensors(LLAMA_CONFIG, {k: v.clone() for k, v in tensors.items()}).model
    given = dict(tensors)
    taken = from_tensors(LLAMA_CONFIG, given, take=True).model
    assert given == {}                                                  # the model holds the only references
    assert _by_columns(taken.layers[1].attn.wo.weight)
    for (name, a), (_, b) in zip(kept.state_dict().items(), taken.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
