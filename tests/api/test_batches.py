"""A batch of runs: prompts of different lengths prefilled in packed passes, each run equal to its prompt's
run alone and to transformers' padded batch (an attention mask over right padding), cut into chunks that
fit a memory budget, with progress after each prompt."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from explorer.core import packed, pass_budget
from tests.core import intervention_reference as ref

PROMPTS = [[5, 17, 33, 2, 71, 40, 9, 88, 23, 61, 14], [7, 8, 9], list(range(10, 44)), [60, 2, 90, 31, 31, 8]]
PACKED = ["llama", "llama_mqa", "mistral", "qwen2", "qwen3", "gpt2", "gemma3"]


def close(got: np.ndarray, expected: np.ndarray, rtol: float = 1e-5) -> bool:
    """Equal within rtol of the largest |expected| (float rounding of another matmul order)."""
    assert got.shape == expected.shape
    return float(np.abs(got - expected).max()) <= rtol * max(float(np.abs(expected).max()), 1.0)


def assert_same_run(run, alone) -> None:
    """The trace, logits, maps, activations and cache of `run` equal those of the prompt's run alone."""
    assert run.ids.tolist() == alone.ids.tolist() and run.trace.n_steps == alone.trace.n_steps
    assert close(run.logits, alone.logits)
    np.testing.assert_array_equal(run.kv_bytes, alone.kv_bytes)
    for ours, theirs in zip(run.trace.steps, alone.trace.steps):              # the next-token candidates
        np.testing.assert_array_equal(ours.top_ids, theirs.top_ids)
        assert close(ours.top_probs, theirs.top_probs)
    info = alone.trace.model
    for layer in range(info.n_layers):
        ours, theirs = run.trace.steps[0].layers[layer], alone.trace.steps[0].layers[layer]
        assert close(ours.x, theirs.x)
        for name in ("q", "k", "v"):
            assert close(getattr(ours.attn, name), getattr(theirs.attn, name)), (layer, name)
        assert close(run.residual(layer), alone.residual(layer))
        for head in range(info.n_heads):
            assert close(run.attention(layer, head), alone.attention(layer, head)), (layer, head)


@pytest.mark.parametrize("family", PACKED)
def test_a_batch_is_one_packed_pass_and_each_run_equals_its_run_alone(family, model, passes):
    seen = []
    runs = model.run(PROMPTS, steps=2, progress=lambda done, total: seen.append((done, total)))
    assert passes == [len(PROMPTS)]
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt, steps=2))


@pytest.mark.parametrize("family", PACKED)
def test_a_packed_batch_equals_transformers_padded_batch(family, hf_model, model):
    longest = max(len(p) for p in PROMPTS)
    ids = torch.tensor([p + [0] * (longest - len(p)) for p in PROMPTS])
    mask = torch.tensor([[1] * len(p) + [0] * (longest - len(p)) for p in PROMPTS])
    with torch.inference_mode():
        out = hf_model(ids, attention_mask=mask, output_attentions=True)
    for row, (prompt, run) in enumerate(zip(PROMPTS, model.run(PROMPTS))):
        t = len(prompt)
        assert close(run.logits, out.logits[row, :t].numpy())
        for layer, maps in enumerate(out.attentions):
            for head in range(maps.shape[1]):
                assert close(run.attention(layer, head), maps[row, head, :t, :t].numpy(), rtol=1e-4)


@pytest.mark.parametrize("family", ["llama"])
def test_a_batch_over_the_memory_budget_runs_in_chunks_with_the_same_numbers(family, model, passes):
    whole = model.run(PROMPTS)
    assert passes == [4]
    two = pass_budget.pass_bytes(model.loaded.config, [len(PROMPTS[0]), len(PROMPTS[1])], weights=True)
    seen = []
    chunked = model.run(PROMPTS, memory=two, progress=lambda done, total: seen.append((done, total)))
    assert passes[0] == 4 and passes[1:] and max(passes[1:]) < 4         # several chunks, some packed
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for ours, theirs in zip(chunked, whole):
        assert_same_run(ours, theirs)
    before = len(passes)
    alone = model.run(PROMPTS, memory=1)                       # each prompt its own pass: the runs alone
    assert len(passes) == before
    for one, prompt in zip(alone, PROMPTS):
        np.testing.assert_array_equal(one.logits, model.run(prompt).logits)


@pytest.mark.parametrize("family", ["llama"])
def test_the_packed_pass_under_an_ablation_a_kernel_and_a_hidden_entry_equals_each_alone(
        family, hf_model, model, passes):
    edit = explorer.Intervention().ablate(1, 2, positions=[2]).kernel("relu", layers=[0]).hide(1, query=4)
    runs = model.run(PROMPTS, intervention=edit)
    assert passes == [4]
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt, intervention=edit))


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_a_mean_ablation_packs_each_prompt_with_its_own_mean_as_alone_and_as_the_hooked_transformers(
        family, hf_model, model, passes):
    for positions in (None, [1, 2]):
        mean = (explorer.Intervention().ablate(1, 2, "mean", positions=positions)
                .ablate(0, 0, "mean", positions=positions))
        runs = model.run(PROMPTS, steps=2, intervention=mean)
        assert passes[-1] == len(PROMPTS)                                   # one packed pass
        for prompt, run in zip(PROMPTS, runs):
            assert_same_run(run, model.run(prompt, steps=2, intervention=mean))   # the steps reuse its own means
            with ref.ablate_heads(hf_model, [(1, 2), (0, 0)], model.info.n_heads, "mean", positions), \
                    torch.inference_mode():
                expected = hf_model(torch.tensor([prompt])).logits[0]
            assert close(run.logits[: len(prompt)], expected.numpy())
    assert passes == [len(PROMPTS)] * 2


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_a_batch_under_patches_is_one_packed_pass_equal_to_each_alone_and_to_the_hooked_transformers(
        family, hf_model, model, passes):
    rng = np.random.default_rng(0)
    d, d_head = model.info.d_model, model.info.d_v
    head, mlp = rng.normal(size=(2, d_head)).astype(np.float32), rng.normal(size=(2, d)).astype(np.float32)
    edit = explorer.Intervention().patch_head(1, 2, head, start=1).patch_mlp_out(0, mlp, start=4) \
        .patch_residual(1, 2, rng.normal(size=d).astype(np.float32)).patch_v(0, 1, head[:1], start=2)
    runs = model.run(PROMPTS, steps=1, intervention=edit)
    assert passes == [len(PROMPTS)]
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt, steps=1, intervention=edit))
    only_outputs = explorer.Intervention().patch_head(1, 2, head, start=1).patch_mlp_out(0, mlp, start=4)
    cols = ref.head_slices(hf_model, 1, model.info.n_heads)(2)

    def head_rows(module, args):
        x = args[0].clone()
        x[:, 1:3, cols] = torch.from_numpy(head)                               # O_h at positions 1 and 2
        return (x,) + tuple(args[1:])

    for prompt, run in zip(PROMPTS, model.run(PROMPTS, intervention=only_outputs)):
        if len(prompt) < 6:                                                    # the hook writes rows 4 and 5
            continue
        handle = ref.output_projections(hf_model)[1].register_forward_pre_hook(head_rows)
        with ref.hooks([handle]), ref.patch_output(ref.sublayer_modules(hf_model, "mlp_out")[0], mlp, 4), \
                torch.inference_mode():
            expected = hf_model(torch.tensor([prompt])).logits[0]
        assert close(run.logits, expected.numpy())
    assert passes == [len(PROMPTS)] * 2


@pytest.mark.parametrize("family", ["llama"])
def test_a_wrong_memory_budget_is_one_sentence(family, model):
    for wrong in ("1GB", 0, True, 1.5):
        with pytest.raises(explorer.ExplorerError, match="memory=.* must be a number of bytes"):
            model.run(PROMPTS, memory=wrong)


def test_chunks_keep_the_order_and_stay_within_the_budget():
    sizes = [3, 4, 2, 9, 1, 1]
    cuts = pass_budget.chunks(len(sizes), lambda indices: sum(sizes[i] for i in indices) <= 7)
    assert cuts == [[0, 1], [2], [3], [4, 5]]


@pytest.mark.parametrize("family", ["llama", "gemma3"])
@pytest.mark.parametrize("site", ["head", "resid"])
def test_patching_pairs_of_different_lengths_shares_passes_and_equals_each_pair_alone(family, model, site,
                                                                                      monkeypatch):
    from explorer.core import patching

    calls = []
    original = patching._patched
    monkeypatch.setattr(patching, "_patched", lambda *args: calls.append(len(args[1])) or original(*args))
    cleans = [PROMPTS[0], PROMPTS[1], PROMPTS[3]] if site == "head" else [PROMPTS[0][:6], PROMPTS[3], PROMPTS[2][:6]]
    corrupts = [clean[::-1] for clean in cleans]
    if site == "resid":
        with pytest.raises(explorer.ExplorerError, match="residual maps needs pairs of one length; these have 11, 3"):
            model.patch(PROMPTS[:2], PROMPTS[:2], target=7, against=42, site=site)
    seen = []
    maps = model.patch(cleans, corrupts, target=[7, 3, 5], against=42, site=site,
                       progress=lambda done, total: seen.append((done, total)))
    together = len(calls)
    total = sum(m.values.size for m in maps.maps)
    assert seen[-1] == (total, total) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    for clean, corrupt, target, one in zip(cleans, corrupts, [7, 3, 5], maps.maps):
        alone = model.patch(clean, corrupt, target, 42, site=site)
        assert close(one.values, alone.values) and one.clean == pytest.approx(alone.clean, abs=1e-5)
    assert together < len(calls) - together                               # fewer passes than pair by pair
    assert site == "resid" or together == model.info.n_layers             # 12 sites: one pass a layer


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_head_scores_over_sequences_of_different_lengths_are_one_packed_pass(family, model, passes):
    sequences = [PROMPTS[0], PROMPTS[1], PROMPTS[3]]
    scores = model.heads(sequences, repeat=3)
    assert passes == [3]
    alone = [model.heads(ids, repeat=3) for ids in sequences]
    for name in ("previous_token", "induction", "sink"):
        expected = np.mean([getattr(one, name) for one in alone], axis=0)
        assert close(getattr(scores, name), expected), name


@pytest.mark.parametrize("family", ["gemma3", "gpt2", "qwen3"])
def test_a_batch_of_differences_equals_the_attribution_of_each_token(family, model):
    """D's parts, read once along W_U[t] - W_U[a] for the whole batch, are those of logit(t) minus those of
    logit(a) (each attributed alone: checked against transformers in tests/core/test_attribution.py),
    through Gemma's sandwich norms and GPT-2's biases too."""
    targets, againsts = [7, 3, 50, 11], [42, 9, 2, 12]
    parts = model.attribute(PROMPTS, target=targets, against=againsts)
    for prompt, t, a, part in zip(PROMPTS, targets, againsts, parts):
        mine, theirs = model.attribute(prompt, token_id=t), model.attribute(prompt, token_id=a)
        assert part.difference == pytest.approx(mine.logit - theirs.logit, abs=1e-4)
        assert part.total() == pytest.approx(part.difference, abs=1e-4)
        assert part.embed == pytest.approx(mine.embed - theirs.embed, abs=1e-4)
        assert part.rest == pytest.approx(mine.rest - theirs.rest, abs=1e-4)
        np.testing.assert_allclose(part.heads, mine.heads - theirs.heads, atol=1e-4)
        np.testing.assert_allclose(part.mlp, mine.mlp - theirs.mlp, atol=1e-4)


@pytest.mark.parametrize("family", ["llama"])
def test_a_packed_pass_holds_at_most_pass_rows_rows(family, model, passes, monkeypatch):
    monkeypatch.setattr(packed, "PASS_ROWS", 15)                 # 11 + 3 fit; 34 runs alone; 6 alone after it
    runs = model.run(PROMPTS)
    assert passes == [2]
    for prompt, run in zip(PROMPTS, runs):
        assert close(run.logits, model.run(prompt).logits)


@pytest.mark.parametrize("family", ["deepseek_v2", "deepseek_v3"])
def test_latent_attention_packs_a_batch_equal_to_each_alone_and_to_transformers(family, hf_model, model, passes):
    seen = []
    runs = model.run(PROMPTS, steps=2, progress=lambda done, total: seen.append((done, total)))
    assert passes == [len(PROMPTS)] and seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for prompt, run in zip(PROMPTS, runs):
        assert_same_run(run, model.run(prompt, steps=2))                       # the latent cache: the steps agree
    ids, mask = (torch.tensor([p + [0] * (len(PROMPTS[2]) - len(p)) for p in PROMPTS]),
                 torch.tensor([[1] * len(p) + [0] * (len(PROMPTS[2]) - len(p)) for p in PROMPTS]))
    with torch.inference_mode():
        expected = hf_model(ids, attention_mask=mask).logits
    for row, (prompt, run) in enumerate(zip(PROMPTS, model.run(PROMPTS))):
        assert close(run.logits, expected[row, :len(prompt)].numpy())
    scores = model.heads(PROMPTS[:2], repeat=2)
    alone = [model.heads(prompt, repeat=2) for prompt in PROMPTS[:2]]
    assert passes[-1] == 2 and close(scores.induction, np.mean([s.induction for s in alone], axis=0))
