"""Issue 24's checks against transformers with its own hooks, on SmolLM2 as on the random families: the same
test bodies (tests/api/test_activations.py, test_research.py, test_path_batches.py, test_unequal_batches.py)
given the pulled SmolLM2-135M and transformers' Llama loaded from its save_hf folder (the same float32 weights).
Batched runs equal single runs, activations equal the hooked sublayer outputs, the parts of a logit difference
equal the hooked references, and a patch, a mean ablation at a position and a path patch equal the same edits
made with hooks."""
from __future__ import annotations

import pytest
import torch

import explorer
from tests.api import test_activations, test_path_batches, test_research
from tests.api.test_batches import close

pytestmark = pytest.mark.realmodel
FAMILY = "llama"                       # SmolLM2 is a Llama: RMSNorm, the llama-like module names


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    """(explorer's SmolLM2, transformers' Llama from its save_hf folder)."""
    import transformers

    from explorer.core.store import pulled_path

    if pulled_path("smollm2-135m") is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    model = explorer.load("smollm2-135m")
    folder = model.save_hf(tmp_path_factory.mktemp("smollm2"))
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                           attn_implementation="eager").eval()
    return model, hf


def test_smollm2_activations_equal_the_hooked_sublayer_outputs(smollm2):
    model, hf = smollm2
    test_activations.test_activations_equal_the_hooked_sublayer_outputs(FAMILY, hf, model)


def test_smollm2_parts_of_a_logit_difference_are_the_hooked_references(smollm2):
    model, hf = smollm2
    test_research.test_the_parts_of_a_logit_difference_are_the_hooked_references(FAMILY, hf, model)


def test_smollm2_run_under_a_patch_and_a_mean_ablation_at_a_position_equals_the_hooked_model(smollm2):
    model, hf = smollm2
    test_research.test_a_run_under_an_intervention_equals_the_hooked_model(FAMILY, hf, model)


def test_smollm2_batch_of_runs_equals_each_run_alone(smollm2):
    model, hf = smollm2
    test_research.test_a_batch_of_runs_equals_each_run_alone(FAMILY, hf, model)


def test_smollm2_path_patched_batch_equals_transformers_hooks(smollm2):
    model, hf = smollm2
    test_path_batches.test_each_run_of_a_path_patched_batch_equals_transformers_hooks(FAMILY, hf, model)


def test_smollm2_batch_of_several_lengths_equals_transformers_on_each_prompt(smollm2):
    model, hf = smollm2
    prompts = ["When Mary and John went to the store, John gave a drink to",
               "The capital of France is", "One, two, three, four, five, six, seven, eight, nine, ten, eleven"]
    for record in ("logits", "standard"):
        runs = model.run(prompts, record=record) if record == "logits" else model.run(prompts)
        for prompt, run in zip(prompts, runs):
            with torch.inference_mode():
                expected = hf(torch.as_tensor(run.ids)[None]).logits[0].numpy()
            assert close(run.logits, expected, rtol=1e-4), (record, prompt)
            assert close(run.logits, model.run(prompt).logits)
