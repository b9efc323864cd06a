"""The KV cache panel's sentence on an MLA model names each size it compares with, and its numbers are the cache's own:
it said the expanded K/V "would take 6.0× more" while the variants' table under it gave MHA 4.8× (vs MHA 0.208×),
each right by its own count (drive27).

Expectations from outside the app: what the model caches per token per layer from transformers itself (the latent and
the RoPE key its DeepSeek-V3 keeps in past_key_values), equal to d_c + d_R of its config.json; and the MHA of the same
heads, 2·N_Q·d_h (DeepSeek-V2's count), from the config."""
from __future__ import annotations

import json
import re

import pytest
import torch
import transformers

from tests.app.journey import BUNDLED
from tests.app.window_helpers import opened

MLA = BUNDLED / "shakespeare-mla"
pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def transformers_cache_elements() -> int:
    """Numbers per token per layer in transformers' own cache of the model."""
    model = transformers.AutoModelForCausalLM.from_pretrained(MLA, dtype=torch.float32).eval()
    with torch.no_grad():
        cache = model(input_ids=torch.tensor([[1, 2, 3]]), use_cache=True).past_key_values
    keys, values = cache.layers[0].keys, cache.layers[0].values         # (batch, heads, tokens, width)
    return keys.shape[1] * keys.shape[3] + values.shape[1] * values.shape[3]


def test_the_mla_sentence_and_the_table_give_the_same_mha_size(qtbot, window):
    config = json.loads((MLA / "config.json").read_text())
    cached = config["kv_lora_rank"] + config["qk_rope_head_dim"]
    mha = 2 * config["num_attention_heads"] * config["qk_nope_head_dim"]
    assert config["qk_nope_head_dim"] == config["v_head_dim"]           # d_h, as the paper counts it
    assert transformers_cache_elements() == cached
    opened(qtbot, window, MLA)
    dock = window.docks["kv_cache"]
    dock.show()
    dock.raise_()
    panel = dock.widget()
    qtbot.waitUntil(lambda: "MLA caches" in panel.grouping.text() and panel.table.rowCount() > 0, timeout=30_000)
    text = re.sub(r"<[^>]+>", "", panel.grouping.text())
    said = [int(n) for n in re.findall(r"(?<![\w.×^])(\d+)(?![\d.×])", text.split(":", 1)[1])]
    assert cached in said and mha in said, (text, cached, mha)
    assert f"{mha} ({mha / cached:.1f}× more, the table's MHA row)" in text, text
    rows = {panel.table.item(r, 0).text().split()[0]: panel.table.item(r, panel.table.columnCount() - 1).text()
            for r in range(panel.table.rowCount())}
    native = f"mla-{config['kv_lora_rank']}"
    assert rows[native] == f"{cached / mha:.3f}×", rows                    # the table's MHA ratio, the same sizes
