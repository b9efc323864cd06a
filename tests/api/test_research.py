"""The research calls against transformers with its own hooks: the attribution of a logit difference
(its parts, their sum and its lens), runs under an explorer.Intervention, and batches equal to single runs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from tests.api.test_match_hf import PROMPT, reference
from tests.core import intervention_reference as ref

TARGET, AGAINST = 7, 42


def parts_of(hf_model):
    """(final norm, the blocks, each block's W^O as (d, H d_v)) of a llama-like or a GPT-2 model."""
    if hasattr(hf_model, "transformer"):                                         # GPT-2: Conv1D, x @ W
        blocks = list(hf_model.transformer.h)
        return hf_model.transformer.ln_f, blocks, [b.attn.c_proj.weight.detach().double().T for b in blocks]
    blocks = list(hf_model.model.layers)
    return hf_model.model.norm, blocks, [b.self_attn.o_proj.weight.detach().double() for b in blocks]


def hf_pieces(hf_model, ids, position):
    """At `position`: the final norm's input, each W^O input (concat_h O_h), each FFN output, the hidden states."""
    kept = {"final": [], "mlp": []}
    norm, blocks, _ = parts_of(hf_model)
    heads, recording = ref.record_head_inputs(hf_model)
    handles = [norm.register_forward_pre_hook(lambda m, a: kept["final"].append(a[0][0, position]))]
    handles += [block.mlp.register_forward_hook(lambda m, a, out: kept["mlp"].append(out[0, position]))
                for block in blocks]
    with recording, ref.hooks(handles), torch.inference_mode():
        out = hf_model(torch.as_tensor(ids)[None], output_hidden_states=True)
    return kept, [h[0, position] for h in heads], out


@pytest.mark.parametrize("family", ["llama", "llama_mqa", "qwen2", "qwen3", "mistral", "gpt2", "deepseek_v2",
                                    "deepseek_v3"])
def test_the_parts_of_a_logit_difference_are_the_hooked_references(family, hf_model, model):
    position = 6
    parts = model.attribute(PROMPT, target=TARGET, against=AGAINST, position=position)
    kept, heads, out = hf_pieces(hf_model, PROMPT, position)
    logits = out.logits[0, position].double()
    assert parts.difference == pytest.approx(float(logits[TARGET] - logits[AGAINST]), abs=1e-4)
    assert parts.total() == pytest.approx(parts.difference, abs=1e-4)
    # the readout through the final norm frozen at this position: u = (W_U[t] - W_U[a]) * w / rms(h_L), for a
    # LayerNorm centred and over the standard deviation
    h = kept["final"][0].double()
    norm, blocks, o_projs = parts_of(hf_model)
    w_u = hf_model.lm_head.weight.detach().double()
    u = (w_u[TARGET] - w_u[AGAINST]) * norm.weight.detach().double()
    if isinstance(norm, torch.nn.LayerNorm):
        u = (u - u.mean()) / torch.sqrt(h.var(unbiased=False) + norm.eps)
    else:
        u = u / torch.sqrt((h * h).mean() + norm.variance_epsilon)
    n_heads = model.info.n_heads
    for layer, o_proj in enumerate(o_projs):                                     # (d, H d_v)
        d_v = o_proj.shape[1] // n_heads
        for head in range(n_heads):
            cols = slice(head * d_v, (head + 1) * d_v)
            expected = float(u @ (o_proj[:, cols] @ heads[layer][cols].double()))
            assert parts.heads[layer, head] == pytest.approx(expected, abs=1e-4)
        assert parts.mlp[layer] == pytest.approx(float(u @ kept["mlp"][layer].double()), abs=1e-4)
    with torch.inference_mode():
        lens = [float((hf_model.lm_head(norm(s[0, position]))[[TARGET, AGAINST]] * torch.tensor([1.0, -1.0])).sum())
                for s in out.hidden_states[:-1]]
    np.testing.assert_allclose(parts.lens[:-1], lens, atol=1e-4)
    assert parts.lens[-1] == pytest.approx(parts.difference, abs=1e-4)


@pytest.mark.parametrize("family", ["llama"])
def test_attribution_under_an_ablation_is_that_of_the_ablated_model(family, hf_model, model):
    intervention = explorer.Intervention().ablate(1, 0, "zero", positions=[len(PROMPT) - 1])
    parts = model.attribute(PROMPT, target=TARGET, against=AGAINST, intervention=intervention)
    with ref.ablate_heads(hf_model, [(1, 0)], model.info.n_heads, "zero", [len(PROMPT) - 1]):
        logits = ref.logits(hf_model, PROMPT)[-1].double()
    assert parts.difference == pytest.approx(float(logits[TARGET] - logits[AGAINST]), abs=1e-4)
    assert parts.total() == pytest.approx(parts.difference, abs=1e-4)
    assert parts.heads[1, 0] == 0.0
    plain = model.attribute(PROMPT, target=TARGET, against=AGAINST)
    assert abs(plain.difference - parts.difference) > 1e-3


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_a_run_under_an_intervention_equals_the_hooked_model(family, hf_model, model):
    values = np.random.default_rng(0).normal(size=(2, model.info.d_model)).astype(np.float32)
    intervention = explorer.Intervention().patch_mlp_out(0, values, start=4).ablate(1, 2, "mean", positions=[9])
    run = model.run(PROMPT, intervention=intervention)
    with ref.patch_output(ref.sublayer_modules(hf_model, "mlp_out")[0], values, 4), \
            ref.ablate_heads(hf_model, [(1, 2)], model.info.n_heads, "mean", [9]):
        expected, _ = reference(hf_model, run.ids)
    assert np.abs(run.logits - expected).max() / np.abs(expected).max() < 1e-4


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_a_batch_of_runs_equals_each_run_alone(family, hf_model, model):
    prompts = [PROMPT, PROMPT[:6], [3, 1, 4, 1, 5, 9, 2, 6]]
    seen = []
    runs = model.run(prompts, steps=2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
    for prompt, run in zip(prompts, runs):
        alone = model.run(prompt, steps=2)
        assert run.ids.tolist() == alone.ids.tolist()
        assert np.abs(run.logits - alone.logits).max() <= 1e-5 * np.abs(alone.logits).max()   # a packed prefill
        expected, _ = reference(hf_model, run.ids)
        assert np.abs(run.logits - expected).max() / np.abs(expected).max() < 1e-4
    parts = model.attribute(prompts, target=[TARGET, 3, 5], against=AGAINST)
    assert [p.target_id for p in parts] == [TARGET, 3, 5]
    alone = model.attribute(PROMPT[:6], target=3, against=AGAINST)          # one packed pass against its own
    assert parts[1].difference == pytest.approx(alone.difference, abs=1e-4)
    np.testing.assert_allclose(parts[1].heads, alone.heads, atol=1e-4)
    np.testing.assert_allclose(parts[1].lens, alone.lens, atol=1e-4)
    assert parts[2].total() == pytest.approx(parts[2].difference, abs=1e-4)


@pytest.mark.parametrize("family", ["llama"])
def test_patching_a_batch_gives_each_map_and_their_mean(family, model):
    cleans, corrupts = [PROMPT, PROMPT[::-1]], [PROMPT[::-1], PROMPT]
    maps = model.patch(cleans, corrupts, target=TARGET, against=AGAINST)
    for clean, corrupt, one in zip(cleans, corrupts, maps.maps):
        np.testing.assert_allclose(one.values, model.patch(clean, corrupt, TARGET, AGAINST).values, rtol=1e-5,
                                   atol=1e-5)                                   # the pairs share packed passes
    np.testing.assert_allclose(maps.mean.values, (maps.maps[0].values + maps.maps[1].values) / 2)
    scores = model.heads([PROMPT, PROMPT[::-1]])
    alone = [model.heads(prompt).induction for prompt in (PROMPT, PROMPT[::-1])]
    np.testing.assert_allclose(scores.induction, (alone[0] + alone[1]) / 2)


@pytest.mark.parametrize("family", ["llama"])
def test_wrong_types_and_ranges_are_one_sentence(family, model):
    with pytest.raises(explorer.ExplorerError, match="list of 2 prompts"):
        model.encode([[1, 2], [3, 4]])
    with pytest.raises(explorer.ExplorerError, match="out of range"):
        model.attribute(PROMPT, position=len(PROMPT))
    with pytest.raises(explorer.ExplorerError, match="integer token ids"):
        model.run([0.5, 1.5])
    with pytest.raises(explorer.ExplorerError, match="explorer.Intervention"):
        model.run(PROMPT, intervention="ablate")
    with pytest.raises(explorer.ExplorerError, match="whole number"):
        model.run(PROMPT, steps="3")
    with pytest.raises(explorer.ExplorerError, match="no tokenizer"):
        model.to_single_token(" Mary")


@pytest.mark.parametrize("family", ["llama"])
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_patching_under_an_ablation_with_a_callable_metric_matches_hooks(family, hf_model, model, mode):
    """Heads patched from the clean run into the corrupted one, both with head (1, 3) ablated (a mean: over
    each run's own rows, the patched ones too): the metric, a callable on the logits, equals the same edit
    made with transformers' hooks."""
    clean, corrupt = PROMPT, PROMPT[::-1]
    intervention = explorer.Intervention().ablate(1, 3, mode)
    maps = model.patch(clean, corrupt, TARGET, site="head", intervention=intervention,
                       metric=lambda logits: float(logits[TARGET] - logits.mean()))
    n_heads = model.info.n_heads
    with ref.ablate_heads(hf_model, [(1, 3)], n_heads, mode):
        inputs, recording = ref.record_head_inputs(hf_model)
        with recording:
            ref.logits(hf_model, clean)
        for layer, head in ((1, 2), (0, 1)):
            with ref.patch_head(hf_model, layer, head, n_heads, inputs[layer]):
                logits = ref.logits(hf_model, corrupt)[-1]
            assert maps.values[layer, head] == pytest.approx(float(logits[TARGET] - logits.mean()), abs=1e-4)


@pytest.mark.parametrize("family", ["deepseek_v3", "gemma3", "mistral", "qwen3"])
def test_a_packed_batch_of_differences_equals_each_alone_and_the_model(family, hf_model, model):
    prompts = [PROMPT, PROMPT[:7], PROMPT[::-1]]
    parts = model.attribute(prompts, target=TARGET, against=AGAINST)
    for prompt, part in zip(prompts, parts):
        logits = ref.logits(hf_model, prompt)[-1].double()
        assert part.difference == pytest.approx(float(logits[TARGET] - logits[AGAINST]), abs=1e-4)
        alone = model.attribute(prompt, target=TARGET, against=AGAINST)
        np.testing.assert_allclose(part.heads, alone.heads, atol=1e-4)
        np.testing.assert_allclose(part.mlp, alone.mlp, atol=1e-4)
