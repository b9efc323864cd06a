"""No panel shows a trace that is not the current one without saying so: Reset empties them, an edited or
emptied prompt marks them out of date, and another model leaves no what-if result of the last one."""
from __future__ import annotations

import pytest
import transformers  # noqa: E402,F401  (the tiny model is written with it; missing, the run fails, never skips)

from explorer.app.panels.base import Panel
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import PROMPT, idle, new_window, opened, step

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.fixture
def shown(qtbot, tmp_path, tiny, dialogs):
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    for name in ("qkv", "next_token", "tokens", "attention"):          # attention raised last: in front of its tab
        window.docks[name].show()
        window.docks[name].raise_()
    opened(qtbot, window, tiny)
    yield window
    window.close()


def panels(window) -> dict[str, Panel]:
    return {name: dock.widget() for name, dock in window.docks.items()
            if isinstance(dock.widget(), Panel) and dock.widget().is_shown()}


def test_panels_name_the_trace_they_draw(qtbot, shown):
    step(qtbot, shown)
    for name, panel in panels(shown).items():
        assert panel.view_state() == ("trace", shown.session.trace_id), name
        assert not panel.note.isVisibleTo(panel)


def test_reset_empties_every_view_and_says_so(qtbot, shown):
    attention = shown.docks["attention"].widget()
    assert attention.body_widget.isVisibleTo(attention)
    shown.actions.reset.trigger()
    idle(qtbot, shown)
    assert shown.session.trace is None
    for name, panel in panels(shown).items():
        if panel.needs_trace:
            kind, text = panel.view_state()
            assert kind in ("empty", "working") and panel.note.isVisibleTo(panel) and panel.note.text() == text, name
            assert not panel.body_widget.isVisibleTo(panel) and not panel.header.isVisibleTo(panel), name


def test_an_edited_prompt_marks_the_views_out_of_date_until_it_runs(qtbot, shown):
    attention = shown.docks["attention"].widget()
    shown.prompt.set_text(PROMPT + " that is")
    assert shown.session.out_of_date and "edited" in shown.session.out_of_date
    assert attention.view_state()[0] == "out of date" and attention.note.isVisibleTo(attention)
    assert "Out of date" in attention.note.text()
    shown.actions.run.trigger()
    idle(qtbot, shown, lambda: shown.session.out_of_date is None)
    assert attention.view_state() == ("trace", shown.session.trace_id)
    shown.prompt.set_text(PROMPT)                    # typed back as it was: the trace is that prompt's again
    shown.prompt.set_text(PROMPT + " that is")
    assert shown.session.out_of_date is None


def test_an_emptied_prompt_relabels_nothing_as_generated(qtbot, shown):
    step(qtbot, shown, 2)
    tokens = shown.docks["tokens"].widget()
    shown.prompt.set_text("")
    assert shown.session.out_of_date and "empty" in shown.session.out_of_date
    assert len(tokens.rows) == 0                       # not the old trace's tokens, all called "generated"
    assert tokens.view_state()[0] == "out of date" and tokens.note.isVisibleTo(tokens)


def test_another_model_leaves_no_what_if_result_of_the_last(qtbot, shown, tmp_path):
    lab = shown.docks["kv_lab"].widget()
    lab.steps_table.setRowCount(3)
    lab.run_summary.setText("gqa-1: mean KL 0.1 nats")
    lab.original_map.set_matrix([[1.0, 0.0], [0.5, 0.5]], row_labels=["a", "b"], col_labels=["a", "b"])
    other = make_tiny_llama(tmp_path / "other", seed=3)
    opened(qtbot, shown, other)
    assert lab.steps_table.rowCount() == 0 and "KL" not in lab.run_summary.text()
    assert lab.original_map.shape == (0, 0) and lab.original_map.image.image is None


def test_stop_drops_the_panels_questions_and_they_say_so_instead_of_waiting_forever(qtbot, shown):
    import threading

    residual = shown.docks["residual"].widget()
    shown.docks["residual"].show()
    shown.docks["residual"].raise_()
    idle(qtbot, shown, lambda: residual.stream is not None)
    release = threading.Event()
    shown.session.requests.model_job_requested.emit(lambda loaded, cancelled: release.wait(30))   # the thread is busy
    shown.session.select(token=2)                  # the residual stream at 2 is asked, queued behind it
    assert residual.asker.call.running and residual.stream is None
    shown.actions.stop.trigger()                   # the model thread drops what is queued
    release.set()
    idle(qtbot, shown)
    assert not residual.asker.call.running and residual.stream is None          # not waiting, and not asked again
    assert residual.stopped_label.isVisible() and "position 2" in residual.stopped_label.text()
    residual.compute_button.click()                # the person asks again
    idle(qtbot, shown, lambda: residual.stream is not None)
    assert residual.stream.position == 2 and residual.drawn().kind == "trace"
    assert "reading" not in residual.formula and not residual.stopped_label.isVisible()
