"""The trace-memory question is rare (issue 16): the default budget is a share of the machine's memory, which on
a 24 GB machine runs an 8,000-token prompt of SmolLM2-135M or Gemma 3 270M without asking, by the estimate
the app makes before any run; the estimate follows a real long trace; a budget past 2³¹ bytes is kept."""
from __future__ import annotations

import types

import numpy as np
import pytest

from explorer.app.run import budget_dialog, trace_budget
from explorer.app.run.trace_budget import TraceCost, default_budget
from explorer.core.config import ModelConfig
from explorer.core.trace import ModelInfo
from tests.app.shared_window import make_window

N = 8000
GB = 10 ** 9
GIB = 2 ** 30
# The published configs (config.json of HuggingFaceTB/SmolLM2-135M and google/gemma-3-270m).
SMOLLM2 = dict(model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
               num_attention_heads=9, num_key_value_heads=3, vocab_size=49152, max_position_embeddings=8192,
               rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True)
GEMMA3_270M = dict(model_type="gemma3_text", hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
                   num_attention_heads=4, num_key_value_heads=1, head_dim=256, vocab_size=262144,
                   max_position_embeddings=32768, sliding_window=512, query_pre_attn_scalar=256,
                   rope_theta=1000000.0, rope_local_base_freq=10000.0, rms_norm_eps=1e-6,
                   layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 3)


def info_of(hf_config: dict, name: str) -> ModelInfo:
    """What the app knows of a model before its first run, from its config alone."""
    c = ModelConfig.from_hf(hf_config)
    return ModelInfo(name=name, family=c.family, attention=c.attention_kind, n_layers=c.n_layers, n_heads=c.n_heads,
                     n_kv_heads=c.n_kv_heads, d_model=c.d_model, d_qk=c.d_qk, d_v=c.d_v, vocab_size=c.vocab_size,
                     max_positions=c.max_positions, n_params=1, dtype="float32", device="cpu",
                     layer_kinds=c.layer_kinds, sliding_window=c.sliding_window, positional=c.positional)


def test_the_default_budget_is_a_quarter_of_the_memory_within_1_and_16_gb():
    assert default_budget(24 * GIB) == 6_400_000_000              # 6.44 GB in whole 100 MB
    assert default_budget(2 * GIB) == GB and default_budget(0) == GB   # small, or memory unknown
    assert default_budget(256 * GIB) == 16 * GB
    assert trace_budget.DEFAULT_BUDGET == default_budget(trace_budget.physical_memory())


def test_the_estimate_follows_a_long_trace_whose_maps_are_rebuilt_on_demand():
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("llama")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=4096), hf_model.state_dict())
    trace = Decoder(loaded, RecordOptions(), capacity=4096).prefill(np.arange(3000) % 96)
    assert trace.steps[0].layers[0].attn.on_demand
    estimated = TraceCost.estimated(trace.model).prefill_bytes(3000)
    assert estimated == pytest.approx(trace.nbytes(), rel=0.1)


@pytest.mark.parametrize("hf_config, name", [(SMOLLM2, "SmolLM2-135M"), (GEMMA3_270M, "gemma-3-270m")])
def test_an_8000_token_prompt_runs_without_the_question_on_a_24_gb_machine(qtbot, tmp_path, monkeypatch,
                                                                           hf_config, name):
    window = make_window(qtbot, tmp_path)
    controller = window.controller
    asked, prefilled = [], []
    monkeypatch.setattr(budget_dialog, "choose", lambda parent, title, text, offered: asked.append(text))
    monkeypatch.setattr(controller.worker, "prefill", lambda ids: prefilled.append(len(ids)))
    monkeypatch.setattr(controller, "prompt_ids", lambda: np.arange(N) % 100)
    controller.summary = types.SimpleNamespace(info=info_of(hf_config, name), name=name, tokenizer=None,
                                               reference=name, no_step_reason=None, device="cpu", dtype="float32")
    controller.set_trace_budget(default_budget(24 * GIB))
    assert controller.run() and prefilled == [N] and asked == []
    cost = TraceCost.estimated(controller.summary.info)
    assert cost.prefill_bytes(N) + cost.growth(N, 100) < controller.trace_budget     # and a hundred steps after
    controller.set_trace_budget(int(cost.prefill_bytes(N) // 2))    # a budget under the prompt's trace asks
    controller.run()
    assert len(asked) == 1 and f"{N:,} prompt tokens" in asked[0]


def test_a_budget_past_2_31_bytes_reaches_the_settings(qtbot, tmp_path):
    window = make_window(qtbot, tmp_path)
    with qtbot.waitSignal(window.controller.budget_changed) as emitted:
        window.controller.set_trace_budget(6_400_000_000)
    assert emitted.args == [6_400_000_000]
    assert window.settings.trace_budget == 6_400_000_000
