"""Nothing is cut silently: characters the translator's vocabulary has no token for are named by the
Python API (a TextLeftOutWarning) and by the command line (one line on stderr), and the run goes on."""
from __future__ import annotations

import warnings

import pytest

import explorer
from explorer.cli import main
from explorer.views.token_text import TextLeftOutWarning

TEXT = "The quick brown fox"




def test_the_api_warns_with_the_characters_it_leaves_out():
    model = explorer.load("translate-en-zh")
    with pytest.warns(TextLeftOutWarning) as caught:
        ids = model.encode(TEXT)
    read = model.loaded.tokenizer.decode(ids)
    missing, j = "", 0
    for ch in TEXT:                                # what the model reads is a subsequence of the text
        if j < len(read) and read[j] == ch:
            j += 1
        else:
            missing += ch
    assert missing and f": {' '.join(missing)} (" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.encode("March 5, 2024")                 # every character has a token: no warning


def test_the_command_line_names_them_on_one_line(tmp_path, capsys):
    assert main(["trace", "--model", "translate-en-zh", "--prompt", TEXT, "--steps", "1",
                 "--out", str(tmp_path / "t.npz")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("warning: ") and ": T q k (3 characters" in lines[0]
    assert (tmp_path / "t.npz").is_file()
