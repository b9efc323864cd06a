"""The Tokens panel of a translation counts what the encoder reads: the typed source (T tokens) and the task
token the translator puts in front (<2zh>), so its header matches cross-attention's T_KV source tokens.

The expectation is the translator's own tokenizer (the `tokenizers` library on its tokenizer.json), fed the
source as the training data writes it ("<2zh>" then the text), not the app's count.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.app.panels import AttentionPanel, TokensPanel
from explorer.app.state.session import Session
from tests.app.shared_window import make

TRANSLATOR = Path(__file__).resolve().parents[2] / "resources" / "models" / "translate-en-zh"
SOURCE = "March 14, 2024"           # the Learn path's translation stop


@pytest.fixture(scope="module")
def translated():
    """The translator's tokenizer (as the app loads it) and its trace after the prefill of SOURCE."""
    from explorer.core.drivers import make_decoder
    from explorer.core.runtime import load_model

    loaded = load_model(TRANSLATOR)
    return loaded.tokenizer, make_decoder(loaded).prefill(loaded.tokenizer.encode(SOURCE).ids)


def reference_counts() -> tuple[int, int, str]:
    """(T, N_KV, task token): the source alone and the source as the training data gives it, tokenized by the
    translator's tokenizer.json."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TRANSLATOR / "tokenizer.json"))
    example = json.loads((TRANSLATOR / "training.json").read_text(encoding="utf-8"))["examples"][0]["source"]
    task = example[: example.index(">") + 1]                       # "<2zh>"
    return len(tokenizer.encode(SOURCE).ids), len(tokenizer.encode(task + SOURCE).ids), task


def test_the_tokens_header_counts_the_task_token_the_encoder_reads(qtbot, translated):
    tokenizer, trace = translated
    t, n_kv, task = reference_counts()
    assert n_kv == t + 1, "the reference: one task token before the source"
    session = Session()
    tokens, attention = make(qtbot, session, TokensPanel), make(qtbot, session, AttentionPanel)
    session.set_token_display(tokenizer.display)
    session.set_tokens(tokenizer.encode(SOURCE))                    # the source as typed: no task token
    session.set_trace(trace)
    session.select(attention="cross", layer=0, head=0)
    assert len(tokens.rows) == t
    assert f"T = {t}" in tokens.formula
    assert f"T_{{KV}} = {n_kv} source tokens" in tokens.formula and task in tokens.formula, tokens.formula
    assert f"T_{{KV}} = {n_kv} source tokens" in attention.formula, "the header it must match"
