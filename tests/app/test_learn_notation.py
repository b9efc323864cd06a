"""The Learn path in the panels' notation, the same on every stop.

Expectations from the panels' own formulas, not from the stops: the Attention panel scales its scores
(A = softmax(Q_h K_h^T / √d_QK)), and A is the normalised weights (A = Z⁻¹ f_κ(S) in the Experiments panel
and the kernel box), so a path that once writes S without the scale, or Z⁻¹ in front of A, contradicts the
panel beside it. Titles draw their scripts as the text does (W^O as W with a raised O).
"""
from __future__ import annotations

import re

from PySide6.QtWidgets import QApplication

from explorer.app.panels.base import formula_html
from explorer.app.panels.learn import LearnPanel, page_html
from explorer.app.state.session import Session
from explorer.app.widgets.learn_tour import load_stops

STOPS = load_stops()
DEFINES_S = re.compile(r"\bS(?:_h)? = ([^,;.]+)")


def every_line():
    for stop in STOPS:
        for where in ("title", "text", "formula"):
            yield f"{stop.id}.{where}", getattr(stop, where)


def test_every_definition_of_the_scores_is_scaled_as_in_the_attention_panel():
    definitions = [(where, m.group(0)) for where, text in every_line() for m in DEFINES_S.finditer(text)]
    assert len(definitions) >= 3
    unscaled = [(where, d) for where, d in definitions if "√d_{QK}" not in d and "S_{" not in d]
    assert not unscaled, f"S defined without 1/√d_QK: {unscaled}"


def test_z_inverse_normalises_the_kernel_never_the_weights_a():
    # A is already normalised in every panel: Z⁻¹ applies to f_κ(S) or exp(S), never to A
    wrong = [(where, text) for where, text in every_line() if re.search(r"Z⁻¹\s*A", text)]
    assert not wrong, wrong


def test_titles_draw_their_scripts_and_the_chooser_reads_them_plain(qtbot):
    scripted = [(i, s) for i, s in enumerate(STOPS) if re.search(r"[_^]", s.title)]
    assert scripted, "no title has a script to draw"
    panel = LearnPanel(Session(), stops=STOPS)
    qtbot.addWidget(panel)
    for index, stop in scripted:
        page = page_html(stop, index, len(STOPS))
        heading = re.search(r"<h3>(.*?)</h3>", page).group(1)
        assert "^" not in heading and "_" not in heading, heading
        assert "<sup>" in heading or "<sub>" in heading, heading
        chooser = panel.chooser.itemText(index)
        assert "{" not in chooser and "}" not in chooser, chooser
    assert QApplication.instance() is not None


def test_the_question_mark_tips_name_their_stop_as_drawn(qtbot):
    from explorer.app.window.learn_placement import add_stop_buttons

    class Dock:
        def add_learn_button(self, open_stop, tip):
            self.tip = tip

    names = {panel for stop in STOPS for panel in stop.panels}
    window = type("Window", (), {"docks": {name: Dock() for name in names}})()
    add_stop_buttons(window, STOPS)
    from PySide6.QtGui import QTextDocument

    def read(tip: str) -> str:          # the tip as Qt draws it: rich text, its scripts raised and lowered
        document = QTextDocument()
        document.setHtml(tip)
        return document.toPlainText()

    tips = {name: read(dock.tip) for name, dock in window.docks.items()}
    assert "Z⁻¹ fκ(S) V and the scale 1/√dQK" in tips["derivation"], tips["derivation"]
    assert not [tip for tip in tips.values() if "{" in tip or "}" in tip or "^" in tip], tips


def test_no_stop_shows_a_raw_script_mark():
    # formula_html draws one level of scripts: a '_' or '^' left in the page's text is notation the reader sees raw
    from PySide6.QtGui import QTextDocument

    raw = []
    for index, stop in enumerate(STOPS):
        document = QTextDocument()
        document.setHtml(page_html(stop, index, len(STOPS)) + "<p>" + formula_html(stop.formula) + "</p>")
        text = document.toPlainText()
        raw += [(stop.id, text[max(0, m.start() - 20):m.end() + 10]) for m in re.finditer(r"[_^]", text)]
    assert not raw, raw
