"""The Learn stop chooser and the panels' "?" tips draw the notation with real scripts: W^Q as W with a raised Q
(Unicode has no raised Q, so plain text can only read 'W^Q'), d_QK and N_KV with their subscripts lowered.

Judged by Qt's own reading of what is drawn (the character formats of the delegate's text document, the
tooltip's HTML) and by the pixels of the closed box, not by the markup the code writes.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QColor, QTextCharFormat, QTextDocument
from PySide6.QtGui import Qt as GuiQt

from explorer.app.panels.learn import LearnPanel
from explorer.app.state.session import Session
from explorer.app.widgets.learn_tour import Stop, StopState, load_stops
from explorer.app.window.learn_placement import add_stop_buttons

SUPER, SUB = QTextCharFormat.VerticalAlignment.AlignSuperScript, QTextCharFormat.VerticalAlignment.AlignSubScript
TITLES = ("Queries Q = X W^Q", "Keys and values: W^K, W^V", "The scale 1/√d_{QK}", "N_{KV} heads of K and V")


def scripts(document: QTextDocument) -> tuple[str, list[tuple[str, object]]]:
    """The document's text as read, and its (fragment text, vertical alignment) runs."""
    runs, block = [], document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            runs.append((fragment.text(), fragment.charFormat().verticalAlignment()))
            it += 1
        block = block.next()
    return document.toPlainText(), runs


def stops(titles=TITLES) -> tuple[Stop, ...]:
    return tuple(Stop(id=f"s{i}", title=t, text="", formula="", state=StopState(models=("shakespeare-gqa",)))
                 for i, t in enumerate(titles))


def test_the_chooser_draws_w_q_with_a_raised_q_and_d_qk_lowered(qtbot):
    panel = LearnPanel(Session(), stops=stops())
    qtbot.addWidget(panel)
    delegate, model = panel.chooser.itemDelegate(), panel.chooser.model()
    read = [scripts(delegate.document(model.index(i, 0), panel.chooser.font())) for i in range(len(TITLES))]
    assert all("^" not in text and "_" not in text and "{" not in text for text, _ in read), read
    assert read[0][0].endswith("Q = X WQ") and ("Q", SUPER) in read[0][1], read[0]
    assert ("K", SUPER) in read[1][1] and ("V", SUPER) in read[1][1], read[1]
    assert ("QK", SUB) in read[2][1] and ("KV", SUB) in read[3][1], read[2:]
    # the plain text (keyboard search, screen readers) still names each stop in order
    assert [panel.chooser.itemText(i).split(". ")[0] for i in range(len(TITLES))] == ["1", "2", "3", "4"]


def test_every_stop_of_the_path_reads_without_a_caret_in_the_chooser(qtbot):
    path = load_stops()
    panel = LearnPanel(Session(), stops=path)
    qtbot.addWidget(panel)
    delegate, model = panel.chooser.itemDelegate(), panel.chooser.model()
    for i, stop in enumerate(path):
        text, runs = scripts(delegate.document(model.index(i, 0), panel.chooser.font()))
        assert "^" not in text and "{" not in text, text
        if "^" in stop.title:
            assert any(align == SUPER for _, align in runs), (stop.title, runs)


def _ink_columns(image: np.ndarray) -> list[tuple[int, int]]:
    """Runs of columns (first, last) that hold ink."""
    inked = np.flatnonzero(image.any(axis=0))
    runs, start = [], None
    for a, b in zip(inked, list(inked[1:]) + [None]):
        start = a if start is None else start
        if b is None or b != a + 1:
            runs.append((start, a))
            start = None
    return runs


def test_the_closed_chooser_draws_the_q_raised_above_the_baseline_of_the_w(qtbot):
    panel = LearnPanel(Session(), stops=stops(("W^Q",)))
    qtbot.addWidget(panel)
    box = panel.chooser
    box.resize(max(box.sizeHint().width(), 160), box.sizeHint().height())
    grab = box.grab().toImage()
    lightness = np.array([[QColor(grab.pixel(x, y)).lightness() for x in range(grab.width())]
                          for y in range(grab.height())])
    pixels = np.abs(lightness - np.median(lightness)) > 50      # ink: far from the box's own colour
    pixels[:, int(grab.width() * 0.6):] = False          # the arrow at the right is not text
    pixels[:, :3] = pixels[:3, :] = pixels[-3:, :] = False  # nor the frame
    first, last = _ink_columns(pixels)[-1]               # 'WQ' (the glyphs touch), after '1.'
    quarter = max(1, (last - first + 1) // 4)
    rows = np.arange(pixels.shape[0])
    lowest_w = rows[pixels[:, first:first + quarter].any(axis=1)].max()
    lowest_q = rows[pixels[:, last + 1 - quarter:last + 1].any(axis=1)].max()
    assert lowest_q < lowest_w - 2, (lowest_q, lowest_w)  # the Q sits above the W's baseline: raised


def test_the_question_mark_tip_draws_its_stop_with_scripts():
    path = load_stops()

    class Dock:
        def add_learn_button(self, open_stop, tip):
            self.tip = tip

    names = {panel for stop in path for panel in stop.panels}
    window = type("Window", (), {"docks": {name: Dock() for name in names}})()
    add_stop_buttons(window, path)
    tip = window.docks["derivation"].tip
    assert GuiQt.mightBeRichText(tip), tip
    document = QTextDocument()
    document.setHtml(tip)
    text, runs = scripts(document)
    assert "1/√dQK" in text and "_" not in text and "{" not in text, text
    assert ("QK", SUB) in runs, runs
    heads = next(p for s in path if "W^O" in s.title for p in s.panels)
    document.setHtml(window.docks[heads].tip)
    text, runs = scripts(document)
    assert "^" not in text and ("O", SUPER) in runs, (text, runs)


def test_the_question_mark_tip_stays_on_one_line(qtbot):
    # QToolTip word-wraps a rich-text tip (QTipLabel: setWordWrap(Qt::mightBeRichText(text))), and a wrapped QLabel
    # takes about a third of its text's width: 'Learn: Z⁻¹ fκ(S) V' over four lines. Measured as Qt sizes that label.
    from PySide6.QtWidgets import QLabel

    path = load_stops()

    class Dock:
        def add_learn_button(self, open_stop, tip):
            self.tip = tip

    names = {panel for stop in path for panel in stop.panels}
    window = type("Window", (), {"docks": {name: Dock() for name in names}})()
    add_stop_buttons(window, path)
    for name, dock in window.docks.items():
        label = QLabel()
        qtbot.addWidget(label)
        label.setWordWrap(GuiQt.mightBeRichText(dock.tip))
        label.setText(dock.tip)
        lines = label.sizeHint().height() / label.fontMetrics().lineSpacing()
        assert lines < 2, f"the '?' tip of {name} takes {lines:.1f} lines"
