"""Show the work names a GQA cell's shared K/V head, and for MLA, whose every head has its own K and V from one
latent, shows that latent and names no "K/V head" (the Attention header does the same: test_attention_header)."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels.derivation_text import derivation_html
from explorer.core import derivation
from explorer.core.drivers import make_decoder
from explorer.core.runtime import load_model
from tests.app.journey import BUNDLED


@pytest.mark.parametrize("name", ["shakespeare-gqa", "shakespeare-mla"])
def test_the_derivation_names_what_the_head_reads_its_keys_from(name):
    loaded = load_model(str(BUNDLED / name))
    trace = make_decoder(loaded, capacity=12).prefill(np.arange(3, 12))
    config = loaded.config
    for head in range(config.n_heads):
        text = derivation_html(derivation.derive_cell(trace, 1, head, 5, 2), trace.token_text)
        if config.mla:
            assert "K/V head" not in text and "c<sub>KV</sub>" in text, text[:300]
        else:
            group = config.n_heads // config.n_kv_heads
            assert f"head {head} (K/V head {head // group})," in text, text[:300]
