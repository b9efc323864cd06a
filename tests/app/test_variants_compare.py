"""MHA, MQA, GQA and MLA side by side: four workers, one prompt, one Step for all, bytes that match the formulas."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from explorer.app.panels.kv_lab import KVLabPanel
from explorer.app.state.session import Session
from explorer.app.thread.worker import ModelWorker
from explorer.app.widgets.variants_compare import KINDS, VariantsWindow, bytes_summary
from tests.app.fake_core import FakeCore
from tests.app.tiny_model import make_tokenizer


def settle(qtbot, window, steps: int) -> None:
    """Wait until every column holds a trace of `steps` steps and every worker is idle."""
    qtbot.waitUntil(lambda: all(c.trace is not None and c.trace.n_steps == steps for c in window.columns)
                    and not window.busy, timeout=60000)


@pytest.fixture
def fake_window(qtbot):
    cores = []

    def make_worker():
        cores.append(FakeCore())
        return ModelWorker(cores[-1].api())

    panel = KVLabPanel(Session())
    qtbot.addWidget(panel)
    window = panel.open_variants_window({kind: f"models/{kind}" for kind in KINDS}, make_worker)
    qtbot.addWidget(window)
    return window, cores                 # qtbot closes it, which shuts its four workers down


def test_one_press_steps_all_four_models_each_on_its_own_worker(qtbot, fake_window):
    window, cores = fake_window
    assert [c.kind for c in window.columns] == list(KINDS)
    settle(qtbot, window, 1)                            # opened with a prompt: prefilled at once
    assert len(cores) == 4 and all(len(core.decoders) == 1 for core in cores)
    assert len({id(c.worker) for c in window.columns}) == 4
    prompt_tokens = window.columns[0].trace.n_tokens
    window.step()
    window.step()
    settle(qtbot, window, 3)
    for column in window.columns:
        assert column.trace.n_tokens == prompt_tokens + 2
        assert column.map.shape == (prompt_tokens + 2, prompt_tokens + 2)
        assert "KV cache in use" in column.bytes.text() and "per token" in column.bytes.text()
        bold = re.search(r"<b style='color:#[0-9a-f]{6}'>(.*)</b>", column.text.text())   # the generated tail
        assert bold and bold.group(1) and column.text.text().index(bold.group(0)) > 0
    window.back()
    settle(qtbot, window, 2)
    assert all(c.trace.n_tokens == prompt_tokens + 1 for c in window.columns)


def test_the_selected_head_drives_every_map(qtbot, fake_window):
    window, _ = fake_window
    settle(qtbot, window, 1)
    window.layer_box.setValue(1)
    window.head_box.setValue(3)
    for column in window.columns:
        expected = column.trace.attention(1)[3]
        shown = column.map.image.image
        assert np.allclose(np.nan_to_num(shown), expected)
        assert column.map.plot.titleLabel.text == "layer 1, head 3"


def write_variant(folder: Path, kind: str) -> Path:
    """A randomly initialised model of the bundled variants' shape (explorer.train.variants), tiny vocabulary."""
    import torch
    import transformers

    from explorer.train.variants import model_config

    folder.mkdir(parents=True)
    tokenizer = make_tokenizer(folder)
    config = model_config(kind, tokenizer.get_vocab_size())
    torch.manual_seed(KINDS.index(kind))
    model_class = transformers.DeepseekV3ForCausalLM if kind == "mla" else transformers.LlamaForCausalLM
    model_class(config).save_pretrained(folder, safe_serialization=True)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    return folder


@pytest.fixture(scope="module")
def variant_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    return {kind: write_variant(root / f"shakespeare-{kind}", kind) for kind in KINDS}


def test_real_variants_show_the_cache_each_really_keeps(qtbot, variant_folders):
    window = VariantsWindow(variant_folders, prompt="To be, or not")
    qtbot.addWidget(window)
    settle(qtbot, window, 1)
    window.step()
    settle(qtbot, window, 2)
    summary = bytes_summary(window)
    layers, d_head, float32 = 4, 32, 4
    assert summary["mha"][1] == layers * 2 * 6 * d_head * float32
    assert summary["gqa"][1] == layers * 2 * 2 * d_head * float32
    assert summary["mqa"][1] == layers * 2 * 1 * d_head * float32
    assert summary["mla"][1] == layers * (64 + 16) * float32         # d_c + d_R, the latent cache
    n_tokens = window.columns[0].trace.n_tokens
    for kind, (in_use, per_token) in summary.items():
        assert in_use == per_token * n_tokens, kind                  # the engine's measured cache
    mla = window.columns[KINDS.index("mla")]
    assert mla.trace.model.attention == "mla" and "d_c + d_R" in mla.bytes.text()
    window.close()
