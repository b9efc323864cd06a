"""record="logits": a run (or a batch's packed pass) that records no layers, only what a logit metric reads.

Its logits equal the full recording's and transformers' padded batch, under an ablation at one position too
(the same edit made with a hook on o_proj); its pass records nothing and takes the fused attention kernel
in every layer, as a plain forward does; what it did not keep is refused in one sentence."""
from __future__ import annotations

import pytest
import torch

import explorer
from explorer.core import fused_attention
from tests.api.test_batches import PROMPTS, close

FAMILIES = ["llama", "qwen2", "gpt2"]


def padded(prompts):
    longest = max(len(p) for p in prompts)
    ids = torch.tensor([p + [0] * (longest - len(p)) for p in prompts])
    mask = torch.tensor([[1] * len(p) + [0] * (longest - len(p)) for p in prompts])
    return ids, mask


def ablated_at_one_position(hf_model, prompts, layer: int, head: int, position: int):
    """The Intervention that zeroes one head's output at one position, and transformers' logits of the padded
    prompts with that head's slice of o_proj's input zeroed there (a forward pre-hook)."""
    d_v = hf_model.config.hidden_size // hf_model.config.num_attention_heads

    def zero_head(module, args):
        x = args[0].clone()
        x[:, position, head * d_v:(head + 1) * d_v] = 0.0
        return (x,)

    ids, mask = padded(prompts)
    handle = hf_model.model.layers[layer].self_attn.o_proj.register_forward_pre_hook(zero_head)
    try:
        with torch.inference_mode():
            expected = hf_model(ids, attention_mask=mask).logits
    finally:
        handle.remove()
    return explorer.Intervention().ablate(layer, head, positions=[position]), expected


@pytest.fixture
def fused_calls(monkeypatch) -> list[int]:
    """The query rows of each call to the fused attention kernel."""
    seen: list[int] = []
    original = fused_attention.fused

    def counting(q, *rest):
        seen.append(q.shape[1])
        return original(q, *rest)

    monkeypatch.setattr(fused_attention, "fused", counting)
    return seen


@pytest.mark.parametrize("family", FAMILIES)
def test_a_batch_recording_only_logits_equals_transformers_and_the_full_recording(family, hf_model, model,
                                                                                 fused_calls):
    ids, mask = padded(PROMPTS)
    with torch.inference_mode():
        expected = hf_model(ids, attention_mask=mask).logits
    runs = model.run(PROMPTS, record="logits")
    assert fused_calls == [sum(len(p) for p in PROMPTS)] * model.info.n_layers     # one packed pass, no A formed
    for row, (prompt, run) in enumerate(zip(PROMPTS, runs)):
        t = len(prompt)
        assert close(run.logits, expected[row, :t].numpy())
        assert close(run.last_logits, expected[row, t - 1].numpy())
        assert close(run.logits, model.run(prompt).logits)
        assert run.trace.steps[0].layers == ()
        assert close(run.residual(1), model.run(prompt).residual(1))            # activations: on demand


@pytest.mark.parametrize("family", ["llama"])
def test_one_prompt_recording_only_logits_equals_transformers_and_steps_on(family, hf_model, model):
    prompt = PROMPTS[0]
    run = model.run(prompt, record="logits", steps=3)
    with torch.inference_mode():
        expected = hf_model(torch.tensor([run.ids.tolist()])).logits[0]
    assert close(run.logits, expected.numpy())
    assert close(run.last_logits, expected[-1].numpy())
    run.back()
    assert close(run.last_logits, expected[-2].numpy())


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_an_ablation_at_one_position_recording_only_logits_equals_the_hooked_transformers(family, hf_model, model):
    position = 5
    edit, expected = ablated_at_one_position(hf_model, PROMPTS, layer=1, head=2, position=position)
    for row, (prompt, run) in enumerate(zip(PROMPTS, model.run(PROMPTS, intervention=edit, record="logits"))):
        if len(prompt) > position:
            assert close(run.last_logits, expected[row, len(prompt) - 1].numpy())
        assert close(run.logits, model.run(prompt, intervention=edit).logits)


@pytest.mark.parametrize("family", ["llama"])
def test_what_a_logits_recording_did_not_keep_is_one_sentence(family, model, tmp_path):
    run = model.run(PROMPTS[:2], record="logits")[0]
    for read in (lambda: run.attention(0, 0), lambda: run.cache["blocks.0.attn.hook_pattern"],
                 lambda: run.save(tmp_path / "run.npz")):
        with pytest.raises(explorer.ExplorerError, match="record='logits', which keeps no attention"):
            read()
    run.save(tmp_path / "run.npz", attention=False)
    for wrong in ("all", None, 1):
        with pytest.raises(explorer.ExplorerError, match=r"record=.* is not one of trace, logits"):
            model.run(PROMPTS[0], record=wrong)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_a_logits_batch_makes_its_decoders_only_when_a_run_reads_more_than_its_last_logits(family, hf_model, model,
                                                                                         monkeypatch):
    from explorer.core import packed

    made: list[int] = []
    original = packed.PackedDecoder.__init__

    def counting(self, *args, **kwargs):
        made.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(packed.PackedDecoder, "__init__", counting)
    ids, mask = padded(PROMPTS)
    with torch.inference_mode():
        expected = hf_model(ids, attention_mask=mask).logits
    runs = model.run(PROMPTS, record="logits")
    for row, (prompt, run) in enumerate(zip(PROMPTS, runs)):
        assert close(run.last_logits, expected[row, len(prompt) - 1].numpy())
    assert made == []                                    # one pass, no KV cache, trace or candidates yet
    run, prompt = runs[2], PROMPTS[2]
    run.step(2)                                          # its decoder is made from its part of the pass, and steps on
    alone = model.run(prompt, steps=2)
    assert len(made) == 1 and run.ids.tolist() == alone.ids.tolist()
    assert close(run.logits, alone.logits) and close(run.last_logits, alone.last_logits)
    assert close(runs[1].logits, expected[1, : len(PROMPTS[1])].numpy()) and runs[1].trace.n_steps == 1
