"""An exported attention figure of a model with more than one attention kind says which it is: the translator's
PNG/SVG read "translate-en-zh: layer 0, head 0, A (4×4)" for its encoder self-attention, its decoder
self-attention and (before) its cross-attention alike. Checked against the model's own kinds
(trace_views.kinds_of, the maps' shapes): each kind's title names its own stack, and no two are the same."""
from __future__ import annotations

import pytest

from explorer.app.figures import export_dialogs
from explorer.app.panels import AttentionPanel
from explorer.app.state.session import Session
from explorer.drawing.export import export_attention
from explorer.drawing.figures import attention_figure
from explorer.views import trace_views
from tests.app.shared_window import make
from tests.app.synthetic_trace import build_trace
from tests.app.test_encdec_app import translation  # noqa: F401 -- the translator's traces, a module fixture

NAMED = {"encoder": "encoder", "self": "decoder", "cross": "cross"}


def _title(figure) -> str:
    return figure.ci.getItem(0, 0).text


@pytest.mark.parametrize("layer, head", [(2, 0), (2, "all"), ("all", "all")])
def test_each_kind_of_the_translator_is_named_in_its_title(qtbot, translation, layer, head):  # noqa: F811
    trace = translation[1][-1]
    titles = {}
    for kind in trace_views.kinds_of(trace.model):
        view = trace_views.view(trace, kind)
        titles[kind] = _title(attention_figure(view.trace, layer, head, 640, 480, cross=view.cross, kind=view.kind))
        others = set(NAMED.values()) - {NAMED[kind]}
        assert NAMED[kind] in titles[kind] and not any(word in titles[kind] for word in others), (kind, titles)
    assert len(set(titles.values())) == 3, titles
    self_view = trace_views.view(trace, "self")                 # the decoder's, its kind read from the trace
    assert "decoder" in _title(attention_figure(self_view.trace, layer, head, 640, 480))


def test_a_model_with_one_kind_names_none():
    trace = build_trace(prompt_len=4, steps=1)
    assert trace_views.kinds_of(trace.model) == ("self",)
    assert "attention" not in _title(attention_figure(trace, 0, 0, 640, 480))


def test_the_panel_exports_the_encoder_map_under_its_name(qtbot, tmp_path, monkeypatch, translation):  # noqa: F811
    trace = translation[1][-1]
    written = []

    def export_now(parent, shown, layer, head, raw=False, **options):
        written.append(export_attention(shown, tmp_path / f"map{len(written)}.svg", layer, head, **options))

    monkeypatch.setattr(export_dialogs, "ask_and_export_attention", export_now)
    session = Session()
    panel = make(qtbot, session, AttentionPanel)
    session.set_trace(trace)
    for kind in ("encoder", "self"):
        session.select(attention=kind, layer=0, head=0)
        next(a for a in panel.make_export_actions() if a.text().startswith("Export this head")).trigger()
    assert len(written) == 2
    encoder_svg, self_svg = (path.read_text() for path in written)
    assert "encoder self-attention" in encoder_svg and "decoder" not in encoder_svg
    assert "decoder self-attention" in self_svg
