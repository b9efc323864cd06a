"""Every stop's "Try this" has at least one question the app answers (the issue: questions "whose answer the
app then shows"); the cache answers agree with the bundled configs, worked out here by hand:
bytes/token = L · 2 · N_KV · head_dim · 4 (float32), and L · (kv_lora_rank + qk_rope_head_dim) · 4 for MLA.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import explorer
from explorer.app.widgets.learn_tour import load_stops
from explorer.views import try_answers

MODELS = Path(__file__).resolve().parents[2] / "resources" / "models"
STOPS = {stop.id: stop for stop in load_stops()}


def config(name: str) -> dict:
    return json.loads((MODELS / name / "config.json").read_text())


def per_token(name: str) -> int:
    c = config(name)
    if c.get("kv_lora_rank"):
        return c["num_hidden_layers"] * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 4
    return c["num_hidden_layers"] * 2 * c["num_key_value_heads"] * c["head_dim"] * 4


def test_every_stop_has_a_question_the_app_answers():
    unanswered = [stop_id for stop_id, stop in STOPS.items() if not any(t.answer for t in stop.tries)]
    assert not unanswered, unanswered


@pytest.mark.parametrize("name", ["shakespeare-gqa", "shakespeare-mla", "shakespeare-mqa"])
def test_the_kv_cache_answer_is_the_configs_bytes_per_token(name):
    trace = explorer.load(name).run("To be, or not to be").trace
    found = try_answers.answer("kv_bytes", trace)
    assert found.text.startswith(f"{per_token(name):,} bytes: L = {config(name)['num_hidden_layers']} layers"), \
        found.text
    assert found.panel == "kv_cache"


def test_the_written_cache_comparisons_hold_for_the_bundled_twins():
    mla = next(t.text for t in STOPS["mla"].tries if t.answer == "text")
    ratio = per_token("shakespeare-gqa") / per_token("shakespeare-mla")
    assert f"{ratio:.1f} times less" in mla
    assert f"{per_token('shakespeare-mla') / 1024:.2f} KiB against {per_token('shakespeare-gqa') / 1024:.0f} KiB" in mla
    assert f"{per_token('shakespeare-mha') / per_token('shakespeare-mla'):.1f} times less" in mla
    gqa = next(t.text for t in STOPS["gqa"].tries if t.answer == "text")
    assert f"{per_token('shakespeare-mha') // per_token('shakespeare-mqa')} times smaller" in gqa
    assert f"{per_token('shakespeare-mha') // per_token('shakespeare-gqa')} times smaller than MHA" in gqa
