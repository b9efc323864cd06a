"""Finite numbers whose square overflows float32 (|x| past about 1.8e19) make a norm's mean square infinite:
1/sqrt(inf) = 0 maps the row to zeros (RMSNorm) or to its bias (LayerNorm), finite and meaningless, and every
logit after it equal. The probe's huge embeddings gave all-zero logits and exit 0. Such a norm gives NaN
instead, so the forward pass's check refuses it in its one sentence; a row of ordinary size is normed as the
formula says."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.decode import Decoder
from explorer.core.errors import NonFiniteError
from explorer.core.model import LayerNorm, OffsetRMSNorm, RMSNorm
from explorer.core.runtime import load_model
from explorer.core.weights import check_finite
from tests.core.test_encoder import runner_for, tiny_bert
from tests.core.tiny_checkpoints import write_hf_folder

D = 64
HUGE = 4e19                       # finite in float32; its square is not


def _rows() -> torch.Tensor:
    """Row 0 of ordinary size, row 1 huge: (2, D) float32."""
    generator = torch.Generator().manual_seed(0)
    ordinary = torch.randn(D, generator=generator)
    return torch.stack([ordinary, ordinary * HUGE])


@pytest.mark.parametrize("norm", [RMSNorm(D), OffsetRMSNorm(D), LayerNorm(D)], ids=lambda n: type(n).__name__)
def test_a_row_whose_square_overflows_is_nan_and_an_ordinary_row_is_normed(norm):
    x = _rows()
    with torch.no_grad():
        out = norm(x)
        row = x[0].double()
        if isinstance(norm, LayerNorm):
            centred = row - row.mean()
            expected = centred / torch.sqrt(centred.pow(2).mean() + norm.eps)
        else:
            expected = row / torch.sqrt(row.pow(2).mean() + norm.eps)
        if isinstance(norm, OffsetRMSNorm):
            expected = expected * 2                                   # Gemma's gain 1 + w, its w made 1
    assert torch.allclose(out[0].double(), expected, atol=1e-5)
    assert torch.isnan(out[1]).all()
    assert torch.isfinite(x).all() and not torch.isfinite(x[1].pow(2).mean())     # the input is finite


def test_bfloat16_rows_are_normed_in_float32_and_overflow_to_nan():
    out = RMSNorm(D).to(torch.bfloat16)(_rows().bfloat16())
    assert out.dtype == torch.bfloat16 and torch.isfinite(out[0]).all() and torch.isnan(out[1]).all()


def test_torch_own_norms_map_such_a_row_to_finite_numbers():
    """What the explorer's norms stand in for: without them the row passes as finite."""
    x = _rows()
    assert torch.isfinite(torch.nn.functional.rms_norm(x, (D,))).all()
    assert torch.isfinite(torch.nn.LayerNorm(D)(x)).all()


def test_a_model_whose_embeddings_overflow_its_norm_is_refused_naming_it(tmp_path):
    write_hf_folder(tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    decoder = Decoder(loaded)
    ids = loaded.tokenizer.encode("The capital of France is")
    decoder.prefill(ids)
    with torch.no_grad():
        loaded.model.embed.weight.mul_(1e30)
    check_finite(dict(loaded.model.state_dict()), "model")                         # every weight is finite
    with pytest.raises(NonFiniteError, match=r"gave NaN or infinite logits, so its numbers would be meaningless"):
        decoder.step()
    assert decoder.trace.n_steps == 1                                              # the refused pass is not kept
    assert str(tmp_path / "model") in str(pytest.raises(NonFiniteError, Decoder(loaded).prefill, ids).value)


def test_a_bert_whose_embeddings_overflow_its_embedding_norm_is_refused():
    runner = runner_for(tiny_bert())
    with torch.no_grad():
        runner.model.embed.weight.mul_(HUGE / float(runner.model.embed.weight.abs().max()))
    with pytest.raises(NonFiniteError, match=r"^tiny-bert: the encoder's forward pass at position 0 gave NaN"):
        runner.prefill(np.arange(6))
