"""The Residual stream panel on a model deeper than its table's room, which two tests share: a random Llama of
N_LAYERS tiny layers (the `deep_llama` fixture; a test module imports it) and the panel drawn on its trace."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels.residual import ResidualPanel
from explorer.app.state.session import Session
from explorer.app.widgets.model_call import thread_executor
from tests.app.why_helpers import shown

N_LAYERS = 40


@pytest.fixture(scope="module")
def deep_llama():
    """A random Llama of N_LAYERS tiny layers, its trace of 6 prompt tokens, and its layer count (its config's)."""
    import torch
    import transformers

    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors

    config = transformers.LlamaConfig(vocab_size=90, hidden_size=16, intermediate_size=32, num_hidden_layers=N_LAYERS,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    torch.manual_seed(0)
    hf = transformers.LlamaForCausalLM(config).eval()
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="deep-llama")
    decoder = Decoder(loaded)
    decoder.prefill(np.arange(6) * 7 % 90)
    return loaded, decoder.trace, config.num_hidden_layers


def residual_stream_shown(qtbot, deep_llama, size: tuple[int, int]) -> ResidualPanel:
    """A Residual stream panel of `size` on the deep Llama's trace, its last token selected, once the stream came."""
    loaded, trace, _ = deep_llama
    session = Session()
    session.set_model(loaded.info)
    panel = shown(qtbot, ResidualPanel(session), size)
    panel.executor = thread_executor(loaded)
    session.set_trace(trace)
    session.select(token=trace.n_tokens - 1)
    qtbot.waitUntil(lambda: panel.stream is not None, timeout=60000)
    return panel
