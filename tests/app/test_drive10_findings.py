"""What driving the whole app on bare X screens (drive 10) found at the seams, checked where a person sees it."""
from __future__ import annotations

from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window


def test_closing_the_logit_lens_takes_its_caption_away(qtbot, tmp_path, monkeypatch):
    """Next token ▸ Logit lens, then Back to the candidates: the caption "logit lens at position 2: ... after
    each layer" stayed under the candidates, naming a table no longer shown."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1920, 1080)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        panel = journey.raise_panel("next_token")
        journey.act("logit lens", panel.lens_button.click)
        assert panel.lens_table.isVisibleTo(panel) and "lens" in panel.readout.text()
        journey.act("back to the candidates", panel.lens_button.click)
        assert panel.table.isVisibleTo(panel) and not panel.lens_table.isVisibleTo(panel)
        assert "lens" not in panel.readout.text(), f"the candidates sit above {panel.readout.text()!r}"


def test_the_atlas_frames_no_head_over_an_empty_map_while_a_new_model_is_scored(qtbot, tmp_path, monkeypatch):
    """SmolLM2 opened after the translator: while the new model's heads were scored, the atlas's empty map
    kept a red frame where the old model's selected head had been."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1920, 1080)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        panel = journey.raise_panel("atlas")
        journey.idle("scoring the heads")
        assert panel.values is not None and panel.map.tile_box.isVisible()     # the selected head is framed
        monkeypatch.setattr(panel, "_ask_scores", lambda trace: None)       # the next model's scores take long
        journey.window.session.select(layer=2, head=1)
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be")
        assert panel.is_shown() and panel.values is None
        assert not panel.map.tile_box.isVisible(), "a head is framed over the map before any score is drawn"


def test_the_window_asks_to_be_the_active_one_when_nothing_made_it_so(qtbot, tmp_path, monkeypatch):
    """On a bare X screen (no window manager) nothing activated the new main window: F1, Ctrl+Enter and every
    other shortcut reached no window of the app after launch (seen under Xvfb with xdotool). The offscreen
    platform activates a shown window itself, so here the platform's answer is "no active window"."""
    from PySide6.QtWidgets import QApplication

    from explorer.app.window.main_window import MainWindow
    from tests.app.test_window import new_window

    asked = []
    monkeypatch.setattr(QApplication, "activeWindow", staticmethod(lambda: None))
    monkeypatch.setattr(MainWindow, "activateWindow", lambda self: asked.append(self))
    window = new_window(qtbot, tmp_path)
    qtbot.waitUntil(lambda: window in asked, timeout=5000)
    window.close()


def test_an_ablation_added_twice_is_listed_once(qtbot):
    """Ablating L3.H1 on the bundled MLA model and again on the GQA model (experiments that fit are kept across
    a switch) listed "ablate L3.H1 (zero)" twice: "3 of 3 experiments on" for two different ablations."""
    from explorer.app.panels.experiments import ExperimentsPanel
    from explorer.app.state.session import Session
    from explorer.core.intervention import Experiment, HeadAblation, Intervention

    session = Session()
    panel = ExperimentsPanel(session)
    qtbot.addWidget(panel)
    ablation = Intervention(ablations=(HeadAblation(3, 1),))
    panel.add(ablation)
    session.set_experiments((Experiment(ablation, on=False),))             # ticked off
    panel.add(Intervention(ablations=(HeadAblation(3, 1),)))                                # the same, again
    assert [(e.intervention, e.on) for e in session.experiments] == [(ablation, True)], session.experiments
    assert panel.list.count() == 1


def test_the_window_takes_the_focus_back_after_an_error_dialog(qtbot, tmp_path, monkeypatch):
    """Opening a bad file on a bare X screen: once its warning closed no window was active, and every shortcut
    (F1, Ctrl+Enter, Space) did nothing until a click (seen under Xvfb with xdotool)."""
    from PySide6.QtWidgets import QApplication, QMessageBox

    from explorer.app.window.main_window import MainWindow
    from tests.app.test_window import new_window

    window = new_window(qtbot, tmp_path)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    asked = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *args: None)              # closed by the person
    monkeypatch.setattr(QApplication, "activeWindow", staticmethod(lambda: None))  # and no window is active
    monkeypatch.setattr(MainWindow, "activateWindow", lambda self: asked.append(self))
    window.show_error("bad.json is not valid JSON (Expecting property name at line 1).")
    assert asked == [window]
    window.close()
