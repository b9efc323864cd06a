"""A batch under path patching is one packed pass: each prompt's sender delta and receiver input are taken
over its own rows, so each run equals its prompt's run alone (whose path patching equals transformers'
hooks that feed one receiver: tests/core/test_intervention_sites.py), and transformers with those hooks
on each prompt."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from tests.api.test_batches import PROMPTS, assert_same_run, close
from tests.core import intervention_reference as ref
from tests.core.test_intervention_sites import path_reference

SENDER, RECEIVER = (0, 2), (1, 1)


def sender_values(hf_model, n_heads: int, length: int) -> tuple[torch.Tensor, np.ndarray]:
    """The sender head's output O_s (length, d_v) of a clean run, and every head's (length, H d_v)."""
    clean_ids = np.random.default_rng(7).integers(0, 96, size=length)
    kept, recording = ref.record_head_inputs(hf_model)
    with recording:
        ref.logits(hf_model, clean_ids)
    clean_heads = kept[SENDER[0]][0]                                             # (T, H d_v)
    d_v = clean_heads.shape[-1] // n_heads
    return clean_heads, clean_heads[:, SENDER[1] * d_v:(SENDER[1] + 1) * d_v].numpy()


@pytest.mark.parametrize("family", ["llama", "qwen2", "mistral"])
@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_a_batch_under_a_path_patch_is_one_packed_pass_equal_to_each_prompt_alone(family, which, model,
                                                                                 passes):
    shortest = min(len(p) for p in PROMPTS)
    values = np.random.default_rng(1).standard_normal((shortest + 4, model.info.d_v)).astype(np.float32)
    edit = explorer.Intervention().patch_path(SENDER, RECEIVER, which, values, start=1)
    runs = model.run(PROMPTS, steps=1, intervention=edit)
    assert passes == [len(PROMPTS)]
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt, steps=1, intervention=edit))


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_each_run_of_a_path_patched_batch_equals_transformers_hooks(family, hf_model, model):
    n_heads = model.info.n_heads
    longest = max(len(p) for p in PROMPTS)
    clean_heads, values = sender_values(hf_model, n_heads, longest)
    edit = explorer.Intervention().patch_path(SENDER, RECEIVER, "q", values)
    for prompt, run in zip(PROMPTS, model.run(PROMPTS, intervention=edit)):
        t = len(prompt)
        with path_reference(hf_model, SENDER, RECEIVER, "q", clean_heads[:t], n_heads):
            expected = ref.logits(hf_model, np.array(prompt))
        assert close(run.logits, np.asarray(expected).reshape(t, -1), rtol=1e-4)
