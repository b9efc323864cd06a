"""Every export of the Attention panel names the attention kind of a model with more than one: the translator's
CSV header, the names offered for its raw matrix (a .npy holds no header), its numbered frames and its animation,
the frames' and the animation's titles, and a long map's export (which refused the kind altogether) say
"cross-attention" for its cross-attention map, whose columns are the encoder's source tokens. A decoder-only
model's exports name no kind."""
from __future__ import annotations

from pathlib import Path

import pytest

from explorer.app.figures import export_dialogs
from explorer.app.panels import AttentionPanel
from explorer.app.state.session import Session
from explorer.app.widgets import attention_exports
from explorer.drawing import export
from tests.app.csv_maps import read_map
from tests.app.screen_fit import settle
from tests.app.shared_window import make
from tests.app.synthetic_trace import build_trace
from tests.app.test_encdec_app import translation  # noqa: F401 -- the translator's traces, a module fixture

KINDS = ("encoder self-attention", "decoder self-attention", "cross-attention")


def named(text: str) -> list[str]:
    return [words for words in KINDS if words in text]


@pytest.fixture
def asked(monkeypatch, tmp_path):
    """The names the save dialogs offer (the file written under that name in tmp_path), and every figure title
    an export draws."""
    seen = {"names": [], "titles": []}

    def ask_path(parent, title, name, filters):
        seen["names"].append(name)
        return tmp_path / name

    figure = export.attention_figure

    def titled(*args, **kwargs):
        drawn = figure(*args, **kwargs)
        seen["titles"].append(drawn.ci.getItem(0, 0).text)
        return drawn

    monkeypatch.setattr(export_dialogs, "ask_path", ask_path)
    monkeypatch.setattr(export_dialogs, "ask_size", lambda *args, **kwargs: (320, 240))
    monkeypatch.setattr(export, "attention_figure", titled)
    return seen


def open_attention(qtbot, trace, **selection) -> AttentionPanel:
    session = Session()
    panel = make(qtbot, session, AttentionPanel)
    session.set_trace(trace)
    session.select(layer=0, head=0, **selection)
    return panel


def trigger(panel, starts: str) -> None:
    next(a for a in panel.make_export_actions() if a.text().startswith(starts)).trigger()


def test_each_export_of_the_translators_cross_attention_names_it(qtbot, tmp_path, asked, translation):  # noqa: F811
    trace = translation[1][-1]
    panel = open_attention(qtbot, trace, attention="cross")
    trigger(panel, "Export the raw matrix")                       # a CSV: its header and its name
    csv_path = tmp_path / asked["names"][-1]
    values, queries, keys = read_map(csv_path)
    assert keys == list(trace.encoder.token_text)                 # the cross-attention map: source columns
    header = csv_path.read_text(encoding="utf-8").splitlines()[0]
    assert named(header) == ["cross-attention"], header
    assert named(asked["names"][-1]) == ["cross-attention"], asked["names"]
    asked["names"].clear()
    trigger(panel, "Export every step as numbered frames")
    trigger(panel, "Export every step as an animation")
    settle(0.2)
    assert len(asked["names"]) == 2 and all(named(name) == ["cross-attention"] for name in asked["names"]), asked
    assert asked["titles"] and all(named(title) == ["cross-attention"] for title in asked["titles"]), asked
    assert (tmp_path / asked["names"][1]).stat().st_size > 0          # the animation was written
    assert sorted(tmp_path.glob("*_0000.png")), "the numbered frames were written"


@pytest.mark.parametrize("action, suffix", [("Export this head", ".svg"), ("Export the raw matrix", ".csv")])
def test_a_long_maps_export_of_cross_attention_names_it(qtbot, tmp_path, monkeypatch, asked, translation,  # noqa: F811
                                                        action, suffix):
    """A map too long to draw whole goes through long_export, which was not told the kind (and refused it)."""
    monkeypatch.setattr(attention_exports, "is_long", lambda *args: True)
    monkeypatch.setattr(export_dialogs, "ask_path", lambda parent, title, name, filters:
                        asked["names"].append(name) or tmp_path / Path(name).with_suffix(suffix).name)
    trace = translation[1][-1]
    panel = open_attention(qtbot, trace, attention="cross")
    trigger(panel, action)
    written = tmp_path / Path(asked["names"][-1]).with_suffix(suffix).name
    qtbot.waitUntil(lambda: written.exists() and not panel.long_export.running, timeout=60_000)
    assert named(asked["names"][-1]) == ["cross-attention"], asked
    text = written.read_text(encoding="utf-8")
    assert "cross-attention" in (text.splitlines()[0] if suffix == ".csv" else text)
    if suffix == ".csv":
        assert read_map(written)[2] == list(trace.encoder.token_text)


def test_a_decoder_only_models_exports_name_no_kind(qtbot, tmp_path, asked):
    trace = build_trace(prompt_len=5, steps=2)
    panel = open_attention(qtbot, trace)
    for action in ("Export the raw matrix", "Export this head", "Export every step as numbered frames",
                   "Export every step as an animation"):
        trigger(panel, action)
    settle(0.2)
    assert asked["names"] == ["attention_L0_H0.csv", "attention_L0_H0.png", "attention_L0_H0.png",
                              "attention_L0_H0.gif"], asked
    header = (tmp_path / "attention_L0_H0.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "attention" not in header and all("attention" not in title for title in asked["titles"]), asked
