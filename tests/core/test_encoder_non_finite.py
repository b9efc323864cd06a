"""An encoder whose forward pass overflows is refused as a decoder is (NonFiniteError naming the model):
finite weights, one of them 3e38, make the sublayer's output infinite and its LayerNorm NaN. BERT, and the
encoder-decoder's encoder and decoder; the runner keeps nothing of the refused pass."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.core.encdec_decode import EncDecDecoder
from explorer.core.errors import NonFiniteError
from explorer.core.weights import check_finite
from tests.core.test_encdec import SOURCE, tiny_loaded
from tests.core.test_encoder import runner_for, tiny_bert

HUGE = 3e38                       # finite in float32; 3e38 x (a few rows of order 1) is not


def _overflow(linear: torch.nn.Linear) -> None:
    with torch.no_grad():
        linear.weight.fill_(HUGE)


def test_bert_whose_forward_overflows_raises_nonfinite_naming_the_model():
    runner = runner_for(tiny_bert())
    kept = runner.prefill(np.arange(6))
    _overflow(runner.model.layers[1].attn.wo)                                      # W^O of the last layer
    check_finite(dict(runner.model.state_dict()), "tiny-bert")                    # every weight is finite
    with torch.no_grad():
        out = runner.model(torch.arange(6)[None])
    assert not torch.isfinite(out).all()                                           # the pass itself overflows
    with pytest.raises(NonFiniteError, match=r"^tiny-bert: the encoder's forward pass at position 0 gave NaN or "
                                              r"infinite hidden states"):
        runner.prefill(np.arange(9))
    assert runner.trace is kept and runner.kv_cache.length == 6                     # nothing of the refused pass


def test_an_encdec_encoder_that_overflows_raises_before_the_decoder_runs():
    loaded = tiny_loaded()
    decoder = EncDecDecoder(loaded)
    decoder.prefill(SOURCE)
    _overflow(loaded.model.encoder[0].attn.wo)
    with pytest.raises(NonFiniteError,
                       match=r"^tiny: the encoder's forward pass at position 0 gave NaN or infinite hidden states"):
        decoder.prefill(SOURCE)
    assert decoder.trace.n_steps == 0 and decoder.trace.encoder is None and decoder.kv_cache.length == 0


def test_an_encdec_decoder_that_overflows_raises_on_its_logits():
    loaded = tiny_loaded()
    _overflow(loaded.model.decoder[1].ffn.w_out)
    decoder = EncDecDecoder(loaded)
    with pytest.raises(NonFiniteError, match=r"^tiny: the forward pass at position 0 gave NaN or infinite logits"):
        decoder.prefill(SOURCE)
    assert decoder.trace.n_steps == 0 and decoder.kv_cache.length == 0
