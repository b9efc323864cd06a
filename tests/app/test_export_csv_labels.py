"""An attention map's CSV names its rows and columns: a header row of key tokens and a first column of query
tokens, read back with Python's csv module whatever the tokens hold (commas, quotes, line breaks, emoji), and its
numbers exactly the trace's. The window's export and `explorer export` write the same file (one writer)."""
from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from explorer.drawing import export
from tests.app.csv_maps import read_map
from tests.app.synthetic_trace import build_trace

AWKWARD = ("<s>", "a,b", 'say "hi"', "two\nlines", "🙂", "👩\u200d💻", " lead", "tab\tend", "x", "\r", "=1+2")
BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models" / "shakespeare-gqa"


def with_tokens(trace, texts):
    """`trace` whose tokens read `texts` (position after position), everything else the same."""
    steps, start = [], 0
    for step in trace.steps:
        steps.append(dataclasses.replace(step, token_text=tuple(texts[start: start + step.n_new])))
        start += step.n_new
    return dataclasses.replace(trace, steps=tuple(steps))


@pytest.fixture
def trace():
    return with_tokens(build_trace(n_layers=2, n_heads=3, prompt_len=9, steps=2), AWKWARD)


def test_one_head_has_key_tokens_above_and_query_tokens_beside_its_exact_weights(qtbot, tmp_path, trace):
    path = export.export_attention(trace, tmp_path / "head.csv", 1, 2)
    with open(path, newline="", encoding="utf-8") as stream:
        header, *rows = list(csv.reader(stream))
    assert header[1:] == list(AWKWARD)
    assert [row[0] for row in rows] == list(AWKWARD)
    assert all(len(row) == 1 + len(AWKWARD) for row in rows)
    weights = trace.attention_head(1, 2)
    read = np.array([[float(cell) for cell in row[1:]] for row in rows]).astype(weights.dtype)
    assert np.array_equal(read, weights), "the numbers are not the trace's exactly"
    assert "weights" in header[0] and "layer 1" in header[0] and "head 2" in header[0]


def test_scores_keep_minus_infinity_where_masked_and_each_value_exactly(qtbot, tmp_path, trace):
    values, queries, keys = read_map(export.export_attention(trace, tmp_path / "s.csv", 0, 1, values="scores"))
    scores = trace.scores(0, 1)
    assert np.array_equal(values.astype(scores.dtype), scores)
    assert np.isneginf(values[0, 1]), "query 0 may not see key 1: its score is -inf"
    assert (queries, keys) == (list(AWKWARD), list(AWKWARD))


def test_a_layers_heads_are_stacked_each_row_naming_its_head_and_query(qtbot, tmp_path, trace):
    path = export.export_attention(trace, tmp_path / "layer.csv", 0, "all", step=1)
    with open(path, newline="", encoding="utf-8") as stream:
        header, *rows = list(csv.reader(stream))
    tokens = list(AWKWARD[:10])                                # after step 1: the prompt and one new token
    assert header[0] == "head" and header[2:] == tokens
    assert [(row[0], row[1]) for row in rows] == [(str(h), t) for h in range(3) for t in tokens]
    stack = trace.attention(0, upto_step=1)                    # (head, q, k)
    read = np.array([[float(cell) for cell in row[2:]] for row in rows]).astype(stack.dtype)
    assert np.array_equal(read, stack.reshape(-1, stack.shape[-1]))


@pytest.mark.realmodel
def test_the_export_command_writes_the_same_labelled_csv_as_the_model_computes(qapp, tmp_path, monkeypatch):
    from explorer import cli
    from explorer.api import load

    prompt = 'Oh, "Romeo"\nwhere 🙂'
    monkeypatch.setattr(cli, "SUBCOMMANDS", {"export": cli.SUBCOMMANDS["export"]})
    assert cli.main(["export", "--model", str(BUNDLED), "--prompt", prompt, "--steps", "2", "--layer", "1",
                     "--head", "0", "-o", str(tmp_path / "cli.csv")]) == 0
    trace = load(str(BUNDLED)).run(prompt, steps=2).trace
    values, queries, keys = read_map(tmp_path / "cli.csv")
    assert queries == keys == list(trace.token_text)
    assert "," in keys and '"' in keys
    assert np.array_equal(values.astype(np.float32), trace.attention_head(1, 0).astype(np.float32))
