"""Decoding never moves the layout: captions, formulas and readouts that grow with the trace are
wrapped or cut inside their panel, so no dock is resized and no plot laid out again by a step (a
longer caption once widened its dock, and the main window resized the attention dock beside it)."""
from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QEvent, QObject

from explorer.app.panels.base import WrappedText
from explorer.core.trace import Trace
from tests.app.shared_window import make_window
from tests.app.synthetic_trace import build_trace


class Resizes(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.seen.append(obj.objectName() or type(obj).__name__)
        return False


def test_steps_with_ever_longer_tokens_resize_no_dock_and_no_plot(qtbot, tmp_path, qapp):
    window = make_window(qtbot, tmp_path)
    try:
        full = build_trace(n_layers=2, prompt_len=4, steps=8)
        # Each generated token longer than the one before: the captions naming it grow every step.
        steps = tuple(step if step.kind != "decode" else replace(step, token_text=("long token " * index,))
                      for index, step in enumerate(full.steps))
        window.session.set_trace(Trace(model=full.model, steps=steps[:2]))

        def settled() -> bool:            # the window's first layout done (a slow machine takes its time)
            before = {name: dock.geometry() for name, dock in window.docks.items()}
            qtbot.wait(150)
            return before == {name: dock.geometry() for name, dock in window.docks.items()}

        qtbot.waitUntil(settled, timeout=10000)
        geometry = {name: dock.geometry() for name, dock in window.docks.items()}
        resizes = Resizes()
        for dock in window.docks.values():
            dock.installEventFilter(resizes)
        for view in window.docks["attention"].widget().findChildren(QObject):
            if type(view).__name__ == "GraphicsLayoutWidget":
                view.installEventFilter(resizes)
        for n in range(3, len(steps) + 1):
            window.session.set_trace(Trace(model=full.model, steps=steps[:n]))
            window.docks["embeddings"].widget().readout.setText("a hover readout " * 30)
            qtbot.wait(30)
        caption = window.docks["next_token"].widget().position_label
        assert "long token " * 7 in caption.text(), "the caption names the newest token"
        assert resizes.seen == []
        assert {name: dock.geometry() for name, dock in window.docks.items()} == geometry
    finally:
        window.close()


def test_wrapped_text_grows_a_line_at_a_time_and_escapes_plain_text(qtbot):
    text = WrappedText()
    qtbot.addWidget(text)
    text.resize(200, 40)
    text.show()
    text.set_plain("a <b>short</b> one")
    one_line = text.heightForWidth(200)
    assert text.text() == "a &lt;b&gt;short&lt;/b&gt; one"
    text.set_plain("word " * 40)
    assert text.heightForWidth(200) >= 3 * one_line - 10
    assert text.minimumSizeHint().width() == 0, "it never asks its panel to be wider"


def test_a_heatmap_labels_the_axes_it_is_asked_to_and_frames_the_rest(qtbot):
    import numpy as np
    import pyqtgraph as pg

    from explorer.drawing.heatmap import Heatmap

    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    heatmap = Heatmap(view.ci, axes=("left", "top"))
    heatmap.set_matrix(np.eye(3), None, ["a", "b", "c"], ["x", "y", "z"])
    for side in ("left", "top"):
        axis = heatmap.plot.getAxis(side)
        assert axis.isVisible() and axis.style["showValues"], side
        assert axis.tickStrings([0.0, 2.0], 1, 1) == (["a", "c"] if side == "left" else ["x", "z"])
    assert not heatmap.plot.getAxis("right").isVisible() and not heatmap.plot.getAxis("bottom").isVisible()
    assert heatmap.plot.getViewBox().border is not None, "the view's border closes the frame"


def test_a_one_line_label_beside_a_slider_keeps_a_share_of_the_row(qtbot):
    from explorer.app.panels.mask import MaskPanel
    from explorer.app.state.session import Session
    from tests.app.shared_window import make

    session = Session()
    panel = make(qtbot, session, MaskPanel)
    session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=3))
    label = panel.step_label
    qtbot.waitUntil(lambda: label.width() > 150, timeout=5000)           # a third of a 900-pixel row
    assert label.text().startswith("step ")
    label.setText("step " + "x" * 400)                                 # longer than the row: cut, whole in the tooltip
    assert label.toolTip() == label.text() and label.width() < panel.width()


def test_the_context_menu_copies_the_panel_formula_as_text(qtbot):
    from PySide6.QtWidgets import QApplication

    from explorer.app.panels.attention import AttentionPanel
    from explorer.app.state.session import Session
    from tests.app.shared_window import make

    session = Session()
    panel = make(qtbot, session, AttentionPanel)
    session.set_trace(build_trace(n_layers=2, prompt_len=5, steps=1))
    copy = next(action for action in panel.context_menu().actions() if action.text() == "Copy formula")
    copy.trigger()
    assert QApplication.clipboard().text() == panel.formula and panel.formula.startswith("A = softmax(")
    assert "<sub>" in panel.header.text(), "the header draws it with real subscripts"
