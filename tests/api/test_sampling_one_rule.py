"""A sampling value has one rule, Sampling's own: the CLI's `trace`, the API and a session file refuse a
bad one with the very sentence `Sampling(...)` says, naming the value; the CLI with exit 2, before it
loads a model; and none of them rounds or converts a value of the wrong type."""
from __future__ import annotations

import json
import math

import pytest

from explorer import Sampling
from explorer.cli import main
from explorer.core.errors import ExplorerError
from explorer.views.session_state import SessionFileError, SessionState

# (field, the value a session file or the API holds, the same value as typed on the command line)
BAD = [("temperature", math.nan, "nan"), ("temperature", -0.5, "-0.5"), ("temperature", math.inf, "inf"),
       ("top_k", -1, "-1"), ("top_k", 2.5, "2.5"), ("top_p", 0, "0"), ("top_p", 1.5, "1.5"),
       ("seed", -1, "-1"), ("seed", 2**64, str(2**64))]
FLAGS = {"temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p", "seed": "--seed"}


def sampling_sentence(field: str, value) -> str:
    with pytest.raises(ExplorerError) as caught:
        Sampling(**{field: value})
    return str(caught.value)


@pytest.mark.parametrize("field, value, typed", BAD, ids=[f"{f}={t}" for f, _, t in BAD])
def test_the_cli_says_what_sampling_says_before_a_model_loads(field, value, typed, capsys, tmp_path):
    # A model path that does not exist: were the model looked for first, the sentence would say so.
    code = main(["trace", "--model", str(tmp_path / "no-model"), "--prompt", "hi",
                 "--out", str(tmp_path / "o.npz"), FLAGS[field], typed])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [f"error: {sampling_sentence(field, value)}"], err
    assert typed in err and not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("field, value, typed", BAD, ids=[f"{f}={t}" for f, _, t in BAD])
def test_a_session_file_says_what_sampling_says(field, value, typed, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": "transformer-explorer-session", "sampling": {field: value}}))
    with pytest.raises(SessionFileError) as caught:
        SessionState.from_json(path.read_text(), str(path))
    assert str(caught.value) == f"{path}: {sampling_sentence(field, value)}"


@pytest.mark.parametrize("field, value", [("top_k", "3"), ("temperature", "0.7"), ("top_p", True), ("seed", 2.0)])
def test_a_value_of_the_wrong_type_is_refused_not_converted(field, value, tmp_path):
    """int('3') or float('0.7') would have taken it; the schema hands it to Sampling as it is."""
    with pytest.raises(SessionFileError, match="is not legal"):
        SessionState.from_json(json.dumps({"format": "transformer-explorer-session", "sampling": {field: value}}))
    assert sampling_sentence(field, value).startswith(f"sampling {field}={value!r} is not legal")


def test_legal_values_are_the_same_through_every_door(tmp_path, capsys):
    legal = {"temperature": 0.7, "top_k": 5, "top_p": 0.9, "seed": 3}
    state = SessionState.from_json(json.dumps({"format": "transformer-explorer-session", "sampling": legal}))
    assert state.sampling == Sampling(**legal)
    from explorer.tools import arguments

    assert [arguments.sampling_number(str(v)) for v in legal.values()] == list(legal.values())
