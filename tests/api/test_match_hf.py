"""explorer.load / Model.run against transformers: logits within 1e-4 (relative to the largest), attention
within 1e-5, greedy ids identical, at every position of a prompt and its generated tokens."""
from __future__ import annotations

import numpy as np
import pytest
import torch

PROMPT = [5, 17, 33, 2, 71, 40, 9, 88, 23, 61]
STEPS = 4


def greedy_reference(hf_model, prompt: list[int], steps: int) -> list[int]:
    """Greedy decoding by full forward passes without a cache: argmax of the last logits, appended."""
    ids = list(prompt)
    with torch.inference_mode():
        for _ in range(steps):
            ids.append(int(hf_model(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids


def reference(hf_model, ids: np.ndarray):
    with torch.inference_mode():
        out = hf_model(torch.as_tensor(ids)[None], output_attentions=True)
    return out.logits[0].numpy(), [a[0].numpy() for a in out.attentions]


def assert_matches(run, hf_model) -> None:
    ref_logits, ref_attention = reference(hf_model, run.ids)
    assert run.logits.dtype == np.float32 and run.logits.shape == ref_logits.shape
    assert np.abs(run.logits - ref_logits).max() / np.abs(ref_logits).max() < 1e-4
    for layer, heads in enumerate(ref_attention):                       # (N_heads, T, T)
        for head, expected in enumerate(heads):
            got = run.attention(layer, head)
            assert got.dtype == np.float32 and got.shape == expected.shape
            assert np.abs(got - expected).max() < 1e-5, f"layer {layer} head {head}"


def test_a_run_matches_transformers(family, hf_model, model):
    run = model.run(PROMPT, steps=STEPS)
    assert run.ids.dtype == np.int64
    assert run.ids.tolist() == greedy_reference(hf_model, PROMPT, STEPS)
    assert_matches(run, hf_model)


def test_attention_at_an_earlier_step_is_that_steps_map(hf_model, model):
    run = model.run(PROMPT, steps=STEPS)
    _, ref_attention = reference(hf_model, run.ids[: len(PROMPT) + 1])
    np.testing.assert_allclose(run.attention(1, 2, step=1), ref_attention[1][2], atol=1e-5)


@pytest.mark.parametrize("family", ["llama"])
def test_the_comparison_can_fail(family, hf_model, model):
    run = model.run(PROMPT, steps=1)
    with torch.no_grad():
        hf_model.model.layers[1].self_attn.q_proj.weight[3] += 0.5        # a perturbed query head 0
    with pytest.raises(AssertionError):
        assert_matches(run, hf_model)


@pytest.mark.realmodel
@pytest.mark.slow
def test_smollm2_matches_transformers():
    """The pulled SmolLM2-135M (GGUF) against transformers' Llama given the same dequantized weights."""
    import transformers

    import explorer
    from explorer.core.loaders import open_checkpoint
    from explorer.core.store import pulled_path

    path = pulled_path("smollm2-135m")
    if path is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    checkpoint = open_checkpoint(path)
    config = {k: v for k, v in checkpoint.hf_config.items() if k != "model_type"}
    hf_model = transformers.LlamaForCausalLM._from_config(transformers.LlamaConfig(**config),
                                                          attn_implementation="eager").eval()
    hf_model.load_state_dict(checkpoint.tensors, strict=False)
    hf_model.tie_weights()
    run = explorer.load("smollm2-135m").run("The capital of France is", steps=3)
    prompt = run.ids[:5].tolist()
    assert run.ids.tolist() == greedy_reference(hf_model, prompt, 3)
    assert run.tokens[5] == "␣Paris"
    assert_matches(run, hf_model)


@pytest.mark.parametrize("source", ["folder", "gguf"])
def test_load_opens_an_hf_folder_and_a_gguf_file(source, tmp_path):
    """explorer.load on a path: the folder's own safetensors through transformers' from_pretrained, and the
    same weights written as F32 GGUF (Q/K rows permuted as llama.cpp does) give the same run."""
    import transformers

    import explorer
    from tests.core.tiny_checkpoints import byte_level_tokenizer, write_hf_folder, write_llama_gguf

    tokenizer = byte_level_tokenizer()
    config, tensors = write_hf_folder(tmp_path / "tiny", tokenizer=tokenizer)
    path = tmp_path / "tiny"
    if source == "gguf":
        path = tmp_path / "tiny.gguf"
        write_llama_gguf(path, config, tensors, tokenizer)
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "tiny", attn_implementation="eager").eval()
    run = explorer.load(path).run("The capital of France is", steps=3)
    assert run.ids[:-3].tolist() == tokenizer.encode("The capital of France is").ids
    assert run.ids.tolist() == greedy_reference(hf_model, run.ids[:-3].tolist(), 3)
    assert_matches(run, hf_model)
