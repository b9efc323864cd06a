"""Learn's status line on a real window: a stop's title after Show me draws its scripts as the page's heading
does (not 'd_{QK}' as typed), and File ▸ Close Model leaves no sentence about a model that is gone (it said
"Your own model and prompt are back." with no model open; seen driving the app on Xvfb), nor, launched with no
model, after "Back to my session" while the tour's model stays."""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from PySide6.QtWidgets import QApplication

from explorer.app.panels.learn import plain
from explorer.app.window.learn_placement import open_learn
from tests.app.shared_window import settle

ROOT = Path(__file__).resolve().parents[2]
STOPS = json.loads((ROOT / "resources" / "learn" / "stops.json").read_text())["stops"]


def test_show_me_names_its_stop_with_drawn_scripts_and_close_model_clears_the_status(qtbot, real_core_window):
    app = QApplication.instance()
    index = next(i for i, s in enumerate(STOPS) if "_{" in s["title"] and s["state"].get("models"))
    panel = open_learn(real_core_window)
    panel.go_to(index)
    with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
        panel.show_button.click()
    shown = panel.status.text()
    assert shown.startswith("Shown: ") and "<sub>" in shown, shown
    assert not re.search(r"[_^]\{", shown), shown               # no script typed as source

    panel.own_button.click()                      # no model of the person's own: the tour's is closed
    settle(app, lambda: real_core_window.controller.reference is None and not real_core_window.worker.busy)
    assert "no model open" in panel.status.text(), panel.status.text()

    real_core_window.open_model(STOPS[index]["state"]["models"][-1])
    settle(app, lambda: real_core_window.session.trace is not None or not real_core_window.worker.busy)
    real_core_window.menus.close_model_action.trigger()
    settle(app, lambda: real_core_window.controller.reference is None and not real_core_window.worker.busy)
    said = panel.status.text()
    assert "No model is open" in said and "are back" not in said, said


def test_the_stop_chooser_raises_a_superscript_unicode_has_letters_for():
    # the raised letters are Unicode's MODIFIER LETTER CAPITAL O etc., looked up by name, not copied from the code
    raised_o = unicodedata.lookup("MODIFIER LETTER CAPITAL O")
    heads = next(s["title"] for s in STOPS if "W^O" in s["title"])
    assert plain(heads).endswith("W" + raised_o) and "^" not in plain(heads)
    assert plain("W^Q") == "W^Q"                      # no raised Q in Unicode: the caret stays, readable
    assert plain("1/√d_{QK}") == "1/√d_QK"


def test_back_to_my_session_with_no_model_of_ones_own_says_the_tours_model_stays(qtbot, tmp_path, monkeypatch):
    """Launched with no model, a Learn stop shown, then "Back to my session": it said "Your own model and prompt
    are back." over the tour's model and trace, the prompt emptied under them (every panel "out of date")."""
    from PySide6.QtCore import QSize

    from explorer.app.window.model_refs import short_name
    from tests.app.journey import journey_in_a_window

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        real_core_window = journey.window
        assert real_core_window.controller.reference is None and real_core_window.prompt.text == ""
        panel = open_learn(real_core_window)
        panel.go_to(len(panel.stops) - 1)                       # a late stop
        with qtbot.waitSignal(panel.ensure_tour().reached, timeout=180_000):
            panel.show_button.click()
        tour_prompt = real_core_window.prompt.text
        journey.act("back to my session", panel.own_button.click)
        journey.idle("back")
        said = panel.status.text()
        if real_core_window.controller.reference is None:                  # truly back where it started
            assert real_core_window.session.trace is None, said
        else:
            assert short_name(real_core_window.controller.reference) in said, said
            assert "stay" in said and "are back." not in said.split(":")[0], said
            assert real_core_window.prompt.text == tour_prompt and not real_core_window.session.out_of_date, (
                real_core_window.prompt.text, said)
