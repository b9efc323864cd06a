"""The KV lab's GQA/MQA conversion against transformers: the same mean-pooling done on the Hugging Face
weights by this test, run in transformers' own Llama/Qwen2 with fewer K/V heads, gives the converted logits."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers  # noqa: F401  (the reference: missing, the run fails, never skips)

from explorer.core import convert
from explorer.core.runtime import from_tensors
from tests.core.conftest import make_hf_model

IDS = torch.randint(0, 96, (12,), generator=torch.Generator().manual_seed(5))


def pooled_reference(hf_model, kv_heads: int):
    """transformers' model with `kv_heads` K/V heads, each the mean of its group's original heads' rows."""
    config = hf_model.config
    d_head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    group = config.num_key_value_heads // kv_heads
    state = {}
    for name, tensor in hf_model.state_dict().items():
        if any(name.endswith(f"self_attn.{p}_proj.{kind}") for p in "kv" for kind in ("weight", "bias")):
            heads = tensor.reshape(kv_heads, group, d_head, *tensor.shape[1:])   # (G, heads per group, d_h, ...)
            tensor = heads.mean(dim=1).reshape(kv_heads * d_head, *tensor.shape[1:])
        state[name] = tensor
    new_config = type(config)(**{**config.to_dict(), "num_key_value_heads": kv_heads})
    reference = type(hf_model)._from_config(new_config, attn_implementation="eager").eval()
    reference.load_state_dict(state)
    return reference


@pytest.mark.parametrize("family, kv_heads", [("llama", 1), ("qwen2", 1), ("mistral", 1)])
def test_converted_logits_equal_transformers_on_the_pooled_weights(family, kv_heads):
    hf_model = make_hf_model(family, seed=4)
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict(), name=f"tiny-{family}")
    converted = convert.convert(loaded, "mqa" if kv_heads == 1 else f"gqa-{kv_heads}").loaded
    with torch.inference_mode():
        ours = converted.model.logits(converted.model(IDS, np.arange(len(IDS))))
        theirs = pooled_reference(hf_model, kv_heads)(IDS[None]).logits[0]
    assert float((ours - theirs).abs().max() / theirs.abs().max()) < 1e-4
    with torch.inference_mode():
        original = hf_model(IDS[None]).logits[0]
    assert float((original - theirs).abs().max() / theirs.abs().max()) > 1e-3     # pooling did change the model
