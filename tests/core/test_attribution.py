"""Direct logit attribution against transformers' own forward pass, read with hooks.

The reference is written here from the model's modules, not from ours: a forward pre-hook on
each o_proj sees every head's O_h as a slice of its input, a hook on each mlp (Gemma: on its
post-feedforward norm) sees the FFN output, and a pre-hook on the final norm sees h_L. The
final norm (and Gemma's post-attention norm) is frozen at its input by its own formula.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core import attribution, store
from explorer.core.errors import ExplorerError
from tests.core.conftest import FAMILIES, make_hf_model

T = 9


def _blocks(hf_model):
    inner = getattr(hf_model, "model", None) or hf_model.transformer
    return list(getattr(inner, "layers", None) or inner.h), getattr(inner, "norm", None) or inner.ln_f


def _linear_of(norm, x: torch.Tensor):
    """norm(x') = g * centre(x') + b with g frozen at x, written from transformers' norm classes."""
    name = type(norm).__name__
    x = x.double()
    w = norm.weight.detach().double()
    if name == "LayerNorm":
        sigma = torch.sqrt(((x - x.mean()) ** 2).mean() + norm.eps)
        return (lambda c: w / sigma * (c - c.mean())), norm.bias.detach().double()
    eps = getattr(norm, "eps", None) or norm.variance_epsilon
    rms = torch.sqrt((x * x).mean() + eps)
    gain = (1.0 + w) if "Gemma" in name else w
    return (lambda c: gain / rms * c), torch.zeros_like(x)


def _reference(hf_model, ids: torch.Tensor, position: int, token: int | None):
    blocks, final_norm = _blocks(hf_model)
    seen: dict = {"o_in": {}, "o_out": {}, "ffn": {}}
    handles = []
    for i, block in enumerate(blocks):
        attn = getattr(block, "self_attn", None) or block.attn
        o_proj = getattr(attn, "o_proj", None) or attn.c_proj
        handles.append(o_proj.register_forward_pre_hook(lambda m, a, i=i: seen["o_in"].__setitem__(i, a[0][0])))
        handles.append(o_proj.register_forward_hook(lambda m, a, out, i=i: seen["o_out"].__setitem__(i, out[0])))
        ffn_module = getattr(block, "post_feedforward_layernorm", None) or block.mlp
        handles.append(ffn_module.register_forward_hook(lambda m, a, out, i=i: seen["ffn"].__setitem__(i, out[0])))
    handles.append(final_norm.register_forward_pre_hook(lambda m, a: seen.__setitem__("h_L", a[0][0])))
    with torch.inference_mode():
        out = hf_model(ids[None], output_hidden_states=True)
    for handle in handles:
        handle.remove()
    logits = out.logits[0, position].double()
    token = int(logits.argmax()) if token is None else token
    final, final_bias = _linear_of(final_norm, seen["h_L"][position])
    w_u = hf_model.get_output_embeddings().weight[token].detach().double()
    read = lambda c: float(w_u @ final(c.double()))                             # noqa: E731

    heads, mlp, rest = [], [], float(w_u @ final_bias)
    for i, block in enumerate(blocks):
        attn = getattr(block, "self_attn", None) or block.attn
        o_proj = getattr(attn, "o_proj", None) or attn.c_proj
        o_in = seen["o_in"][i][position].double()                              # concat_h O_h: (H * d_v,)
        n_heads = hf_model.config.num_attention_heads
        d_v = o_in.shape[0] // n_heads
        weight = o_proj.weight.detach().double()
        weight = weight.T if type(o_proj).__name__ == "Conv1D" else weight    # (d, H * d_v)
        post = getattr(block, "post_attention_layernorm", None) if hasattr(block, "pre_feedforward_layernorm") else None
        through = (lambda c: c) if post is None else _linear_of(post, seen["o_out"][i][position])[0]
        per_head = [weight[:, h * d_v:(h + 1) * d_v] @ o_in[h * d_v:(h + 1) * d_v] for h in range(n_heads)]
        heads.append([read(through(c)) for c in per_head])
        if getattr(o_proj, "bias", None) is not None:
            rest += read(through(o_proj.bias.detach().double()))
        mlp.append(read(seen["ffn"][i][position]))
    embed = read(out.hidden_states[0][0, position])
    return dict(token=token, logit=float(out.logits[0, position, token]), embed=embed, heads=np.array(heads),
                mlp=np.array(mlp), rest=rest)


def _check(got: attribution.Attribution, expected: dict, atol: float = 1e-4) -> None:
    assert got.token_id == expected["token"]
    assert got.heads.shape == expected["heads"].shape
    np.testing.assert_allclose(got.heads, expected["heads"], atol=atol, rtol=0)
    np.testing.assert_allclose(got.mlp, expected["mlp"], atol=atol, rtol=0)
    assert got.embed == pytest.approx(expected["embed"], abs=atol)
    assert got.rest == pytest.approx(expected["rest"], abs=atol)
    assert got.logit == pytest.approx(expected["logit"], abs=atol)
    assert got.total() == pytest.approx(got.logit, abs=atol)


def _ids(vocab: int, seed: int = 2) -> torch.Tensor:
    return torch.randint(0, vocab, (T,), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("position, token", [(None, None), (3, 7)])
def test_every_part_matches_transformers(family, hf_model, loaded, position, token):
    ids = _ids(96)
    got = attribution.attribute(loaded, ids.numpy(), position, token)
    _check(got, _reference(hf_model, ids, T - 1 if position is None else position, token))
    assert np.abs(got.heads).max() > 1e-3                           # heads do write to the logit
    assert got.decomposition == (attribution.SANDWICH if family == "gemma3" else attribution.PRE_NORM)


def test_the_softcapped_logit_is_attributed_before_its_cap():
    from explorer.core.runtime import from_tensors

    config_name, model_name, kwargs = FAMILIES["gemma3"]
    FAMILIES["softcapped"] = (config_name, model_name, dict(kwargs, final_logit_softcapping=2.0))
    try:
        hf_model = make_hf_model("softcapped")
    finally:
        del FAMILIES["softcapped"]
    loaded = from_tensors(hf_model.config.to_dict(), hf_model.state_dict())
    ids = _ids(96, seed=5)
    got = attribution.attribute(loaded, ids.numpy())
    with torch.inference_mode():
        capped = float(hf_model(ids[None]).logits[0, -1, got.token_id])
    assert got.capped_logit == pytest.approx(capped, abs=1e-5)
    assert abs(got.logit) > abs(got.capped_logit)                   # the cap squeezed it
    assert got.total() == pytest.approx(got.logit, abs=1e-4)
    assert 2.0 * np.tanh(got.logit / 2.0) == pytest.approx(capped, abs=1e-5)


def test_residual_stream_adds_up(loaded):
    ids = _ids(96).numpy()
    stream = attribution.residual_stream(loaded, ids, position=4, k=3)
    n_layers = loaded.config.n_layers
    assert stream.lens_ids.shape == stream.lens_probs.shape == (n_layers, 3)
    assert stream.attn_norms.shape == stream.ffn_norms.shape == stream.residual_norms.shape == (n_layers,)
    assert np.all(np.diff(stream.lens_probs, axis=1) <= 0) and np.all(stream.lens_probs[:, 0] > 0)
    # the last layer's lens is the model's own next-token distribution
    assert stream.lens_ids[-1, 0] == attribution.attribute(loaded, ids, 4).token_id


@pytest.mark.parametrize("family", ["llama"])
@pytest.mark.parametrize("ids, position, token, message", [
    ([], None, None, "empty"), ([1, 2, 3], 3, None, "position 3 is outside"),
    ([1, 2, 3], -1, None, "position -1"), ([1, 2, 3], None, 96, "token id 96 is outside")])
def test_bad_requests_are_one_sentence(loaded, ids, position, token, message):
    with pytest.raises(ExplorerError, match=message):
        attribution.attribute(loaded, np.array(ids, dtype=np.int64), position, token)


@pytest.mark.realmodel
@pytest.mark.slow
def test_real_smollm2_matches_transformers():
    import transformers

    from explorer.core.loaders import open_checkpoint
    from explorer.core.runtime import load_model

    path = store.pulled_path("smollm2-135m")
    if path is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    checkpoint = open_checkpoint(path)
    config = {k: v for k, v in checkpoint.hf_config.items() if k != "model_type"}
    hf_model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config, attn_implementation="eager")).eval()
    hf_model.load_state_dict(checkpoint.tensors, strict=False)
    hf_model.tie_weights()
    loaded = load_model(checkpoint)
    ids = torch.tensor(checkpoint.tokenizer.encode("The capital of France is").ids)
    got = attribution.attribute(loaded, ids.numpy())
    assert loaded.tokenizer.display(got.token_id) == "␣Paris"
    _check(got, _reference(hf_model, ids, len(ids) - 1, None))
