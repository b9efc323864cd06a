"""`python -m explorer export` names the attention kind of an encoder-decoder's map, as the app's exports do: the
translator's CSV header read "weights, layer 0, head 0" for its three kinds alike, and its encoder's image title
named none. A decoder-only model's files name no kind."""
import csv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

TRANSLATOR = Path(__file__).resolve().parents[2] / "resources" / "models" / "translate-en-zh"
KINDS = {"encoder": "encoder self-attention", "self": "decoder self-attention", "cross": "cross-attention"}


def header(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as stream:
        return next(csv.reader(stream))


def svg_text(path: Path) -> str:
    return " ".join("".join(node.itertext()) for node in ET.parse(path).getroot().iter("{http://www.w3.org/2000/svg}text"))


def named(text: str) -> list[str]:
    return [words for words in KINDS.values() if words in text]


@pytest.mark.parametrize("kind", ["cross", "encoder", "self"])
def test_the_translators_exports_name_their_kind(export_main, tmp_path, kind):
    run = ("--model", TRANSLATOR, "--prompt", "twelve thousand", "--steps", 2, "--attention", kind,
           "--layer", 0, "--head", 0)
    table, picture = tmp_path / f"{kind}.csv", tmp_path / f"{kind}.svg"
    assert export_main(*run, "-o", table) == 0
    assert export_main(*run, "-o", picture, "--size", "400x300") == 0
    row = header(table)
    assert named(row[0]) == [KINDS[kind]], row
    if kind == "cross":                     # the map it names: its keys are the source's tokens, as the encoder's
        source = tmp_path / "source.csv"
        assert export_main(*run[:-6], "--attention", "encoder", "--layer", 0, "--head", 0, "-o", source) == 0
        assert row[1:] == header(source)[1:]
    assert named(svg_text(picture)) == [KINDS[kind]], svg_text(picture)


def test_a_decoder_only_models_exports_name_no_kind(export_main, tiny_llama, tmp_path):
    run = ("--model", tiny_llama, "--prompt", "To be, or not", "--layer", 0, "--head", 0)
    assert export_main(*run, "-o", tmp_path / "a.csv") == 0
    assert export_main(*run, "-o", tmp_path / "a.svg", "--size", "400x300") == 0
    assert "attention" not in header(tmp_path / "a.csv")[0]
    assert "attention" not in svg_text(tmp_path / "a.svg")
