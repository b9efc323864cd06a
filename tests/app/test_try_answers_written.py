"""Every "Try this" question of every stop has an answer the app shows (a "Show the answer" link in the stop's
page), and the numbers the written answers state are what the models and configs give, worked out here from the
API and the config files: the kernel stop's p under softmax and the linear kernel, the heads stop's ablations,
the block stop's ‖a_l‖ and ‖f_l‖, the Llama 3 70B cache and the MLA twin's cache stored per head. The
translator's cross-attention answer is read from the trace: in its last layer each digit of the year it writes
looks most at the same digit of the source, checked here by a loop over the rows of each head.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import explorer
from explorer.app.panels.learn import page_html
from explorer.app.widgets.learn_tour import load_stops
from explorer.views import try_answers

ROOT = Path(__file__).resolve().parents[2]
STOPS = {stop.id: stop for stop in load_stops()}
PROMPT = "To be, or not to be, that is the question:"      # the Shakespeare models' usual prompt, Show me's


def written(stop_id: str) -> str:
    return next(t.text for t in STOPS[stop_id].tries if t.answer == "text" and t.question.startswith(
        {"kernel": "What happens", "heads": "Ablate", "block": "In the Residual", "kv_cache": "In the KV lab",
         "mla": "Read d_c"}[stop_id]))


def probabilities(run) -> np.ndarray:
    logits = np.asarray(run.last_logits, dtype=np.float64)
    p = np.exp(logits - logits.max())
    return p / p.sum()


def percent(x: float) -> str:
    return f"{round(100 * x)} %"


def test_every_question_of_every_stop_has_an_answer_shown_in_its_page():
    for index, stop in enumerate(STOPS.values()):
        page = page_html(stop, index, len(STOPS))
        for number, question in enumerate(stop.tries):
            assert question.answer in try_answers.KINDS, (stop.id, question.question)
            assert f'href="answer:{number}"' in page, (stop.id, question.question)
            if question.answer == "text":
                assert question.text, (stop.id, question.question)


def test_the_kernel_answer_states_p_under_softmax_and_the_linear_kernel():
    model = explorer.load("shakespeare-gqa")
    before = probabilities(model.run(PROMPT))
    after = probabilities(model.run(PROMPT, kernel="linear", kernel_layers=[1]))
    top = int(before.argmax())
    assert int(after.argmax()) == top
    text = written("kernel")
    assert f"stays {model.to_str_tokens([top])[0]!r}" in text
    assert f"from {percent(before[top])} under softmax to {percent(after[top])}" in text


def test_the_heads_answer_states_the_ablations():
    model = explorer.load("shakespeare-mha")
    base = probabilities(model.run(PROMPT))
    top = int(base.argmax())
    p = np.array([[probabilities(model.run(PROMPT, ablate=[(layer, head)]))[top] for head in range(6)]
                  for layer in range(4)])
    tops = [[int(probabilities(model.run(PROMPT, ablate=[(layer, head)])).argmax()) for head in range(6)]
            for layer in range(4)]
    assert all(t == top for row in tops for t in row)
    low, high = np.unravel_index(p.argmin(), p.shape), np.unravel_index(p.argmax(), p.shape)
    text = written("heads")
    assert f"its p, {percent(base[top])} with every head" in text
    assert (f"from {percent(p[low])} (layer {low[0]}, head {low[1]} ablated) to {percent(p[high])} "
            f"(layer {high[0]}, head {high[1]} ablated)") in text


def test_the_block_answer_states_the_largest_add():
    run = explorer.load("shakespeare-gqa").run(PROMPT)
    attn = [float(np.linalg.norm(run.attn_out(layer)[-1])) for layer in range(4)]
    ffn = [float(np.linalg.norm(run.mlp_out(layer)[-1])) for layer in range(4)]
    assert max(ffn) == ffn[0] and ffn[0] > max(attn)
    second = max(attn[1:] + ffn[1:])
    text = written("block")
    assert f"‖f_0‖ ≈ {ffn[0]:.0f}, against ‖a_0‖ ≈ {attn[0]:.1f}" in text
    assert f"‖a_{attn.index(second)}‖ ≈ {second:.0f}" in text


def test_the_llama_cache_answer_is_its_configs():
    c = json.loads((ROOT / "resources" / "configs" / "llama3-70b" / "config.json").read_text())
    head = c["hidden_size"] // c["num_attention_heads"]
    per_token = c["num_hidden_layers"] * 2 * c["num_key_value_heads"] * head * 2       # bfloat16
    text = written("kv_cache")
    assert f"{per_token:,} bytes, {per_token // 1024} KiB, per token" in text
    assert f"10^9 bytes hold {10**9 // per_token:,} tokens" in text
    ratio = c["num_attention_heads"] // c["num_key_value_heads"]
    assert f"{ratio} times fewer, {10**9 // (per_token * ratio):,}" in text


def test_the_mla_per_head_answer_is_its_configs():
    c = json.loads((ROOT / "resources" / "models" / "shakespeare-mla" / "config.json").read_text())
    latent = c["kv_lora_rank"] + c["qk_rope_head_dim"]
    per_head = c["num_attention_heads"] * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"] + c["v_head_dim"])
    text = written("mla")
    assert text.startswith(f"{per_head // latent} times more")
    assert f"= {per_head}: over {c['num_hidden_layers']} layers at float32, " \
           f"{c['num_hidden_layers'] * per_head * 4 / 1024:g} KiB against " \
           f"{c['num_hidden_layers'] * latent * 4 / 1024:g} KiB" in text


@pytest.fixture(scope="module")
def translation():
    return explorer.load("translate-en-zh").run("March 14, 2024", steps=4).trace


def test_the_cross_attention_answer_names_each_written_tokens_source(translation):
    question = next(t for t in STOPS["encdec"].tries if t.answer == "cross_source")
    found = try_answers.answer(question.answer, translation, question.layer)
    layer = question.layer
    target, source = translation.token_text, translation.encoder.token_text
    heads = translation.model.n_heads
    for i in range(len(target) - 1):
        rows = [translation.attention_head(layer, h, cross=True)[i] for h in range(heads)]
        mean = [sum(row[j] for row in rows) / heads for j in range(len(source))]
        j = max(range(len(source)), key=mean.__getitem__)
        assert f"writing {target[i + 1]!r}, {source[j]!r} ({percent(mean[j]).replace(' ', '')})" in found.text
    digits = [t for t in target[1:] if t.strip().isdigit()]
    looked = re.findall(r"writing '(\d)', '␣?(\d)'", found.text)
    assert len(looked) == len(digits) >= 4 and all(a == b for a, b in looked), found.text
    assert (found.layer, found.head, found.panel) == (layer, None, "attention")


def test_the_cross_attention_answer_on_a_decoder_only_model_says_so():
    trace = explorer.load("shakespeare-gqa").run("To be").trace
    assert "no cross-attention" in try_answers.answer("cross_source", trace, 0).text
