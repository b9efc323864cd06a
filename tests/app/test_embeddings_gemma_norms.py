"""The Embeddings panel's ‖row‖₂ bars for Gemma 3 270M against transformers: each bar is the norm of E[id] as
the matrix stores it (transformers' GGUF reader's token_embd, dequantized), not of what Gemma's embedding layer
hands the first block (transformers' Gemma3TextScaledWordEmbedding multiplies by √d_model, 25.3 here), and
the panel says so in the bars' title (it read "‖row‖₂", which a person compared with the scaled rows)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

from explorer.app.panels.embeddings import EmbeddingsPanel
from explorer.app.state.session import Session
from explorer.core import store
from explorer.core.decode import Decoder
from explorer.core.runtime import load_model
from tests.app.shared_window import make

PROMPT = "The capital of France is Paris, and its river is the Seine."


@pytest.fixture(scope="module")
def gemma_file():
    folder = store.pulled_path("gemma3-270m")
    if folder is None:
        pytest.skip("gemma3-270m is not pulled (python -m explorer pull gemma3-270m --accept-license)")
    return folder


def transformers_embedding(gguf: str) -> torch.nn.Module:
    """transformers' own Gemma 3 embedding layer, its weight read from the GGUF file by transformers' reader."""
    config = transformers.AutoConfig.for_model(**load_gguf_checkpoint(gguf)["config"])
    with torch.device("meta"):
        meta = transformers.AutoModelForCausalLM.from_config(config)
    weight = load_gguf_checkpoint(gguf, return_tensors=True, model_to_load=meta)["tensors"]["model.embed_tokens.weight"]
    config.num_hidden_layers, config.layer_types = 1, config.layer_types[:1]   # the embedding alone matters here
    embedding = transformers.AutoModelForCausalLM.from_config(config).get_input_embeddings()
    with torch.no_grad():
        embedding.weight.copy_(torch.as_tensor(weight))
    return embedding.eval()


@pytest.mark.realmodel
def test_the_norm_bars_are_the_unscaled_rows_and_say_so(qtbot, gemma_file):
    loaded = load_model(gemma_file)
    ids = np.asarray(loaded.tokenizer.encode(PROMPT).ids)
    trace = Decoder(loaded).prefill(ids)
    session = Session()
    panel = make(qtbot, session, EmbeddingsPanel)
    session.set_trace(trace)
    qtbot.waitUntil(lambda: panel.norm_bars is not None, timeout=10000)
    bars = np.asarray(panel.norm_bars.opts["width"], dtype=np.float64)
    assert bars.shape == (len(ids),)

    embedding = transformers_embedding(str(gemma_file))
    with torch.no_grad():
        stored = embedding.weight[torch.as_tensor(ids)].double().norm(dim=-1).numpy()       # ‖E[id]‖₂
        entering = embedding(torch.as_tensor(ids)[None])[0].double().norm(dim=-1).numpy()   # what block 0 gets
    np.testing.assert_allclose(bars, stored, rtol=1e-5, atol=1e-6)
    assert np.all(entering > 10 * bars), "transformers' Gemma scales its rows as they enter: these are not those"
    title = panel.norm_plot.titleLabel.toolTip()
    assert "E[id]" in title and "unscaled" in title, f"the bars' title {title!r} does not say which norms they are"
