"""A step chosen earlier than the latest (the Mask's step slider, or File ▸ Export ▸ Record the Window While Stepping)
reaches the Tokens panel and the status bar too, as it reaches Attention: at step k they count the tokens the model
had read by then, the prompt's plus one per decoded step before k, counted here from the trace's step records. A
recording's frames each show one step throughout, and the person's selection comes back after it, cancelled or not
(issue 22: every frame said "T = 24" and "step 3 · 24 tokens" beside attention's step-0 map)."""
from __future__ import annotations

import re

import pytest

from explorer.app.figures import window_animation
from explorer.app.figures.animation import AnimationCancelled
from explorer.app.state.session import Session
from tests.app import test_encdec_app
from tests.app.shared_window import make, window_three_steps_on
from tests.app.test_encdec_app import SOURCE, TARGET

translation = test_encdec_app.translation      # the fixture: the translator's trace after each step


@pytest.fixture
def window(qapp, tmp_path):
    """The real window with the tiny Llama: its prompt prefilled, then three tokens decoded by Step."""
    with window_three_steps_on(qapp, tmp_path / "app") as window:
        yield window


def tokens_by_step(trace) -> list[int]:
    """T at each step: the prompt's tokens fed by the prefill, then each step's own (the records' token ids)."""
    counts, total = [], 0
    for record in trace.steps:
        total += len(record.token_ids)
        counts.append(total)
    return counts


def shown(window) -> tuple[int, str, str]:
    """(the Tokens table's rows, T in the Tokens panel's formula, the status bar's step field)."""
    tokens = window.docks["tokens"].widget()
    found = re.search(r"T = (\d+)", tokens.formula)
    return tokens.table.token_model.rowCount(), found and found.group(1), window.status.fields["step"].text()


def assert_at_step(state: tuple[int, str, str], step: int, counts: list[int]) -> None:
    rows, t, status = state
    assert rows == counts[step] and t == str(counts[step]), (step, counts, state)
    assert status.startswith(f"step {step}") and status.endswith(f" · {counts[step]} tokens"), (step, status)
    if step < len(counts) - 1:
        assert f" of {len(counts) - 1} " in status, status


def test_tokens_and_the_status_bar_follow_the_step_selected(window, qapp):
    trace = window.session.trace
    counts = tokens_by_step(trace)
    assert len(counts) == 4 and counts[0] < counts[-1]
    assert_at_step(shown(window), 3, counts)
    mask = window.docks["mask"].widget()
    least = window.minimumSizeHint().width()
    for step in (0, 2, 1, 3):
        mask._slid(step)                      # the Mask's step slider, as a person drags it
        qapp.processEvents()
        assert window.session.selection.step == (None if step == 3 else step)
        assert_at_step(shown(window), step, counts)
        # "of 3" is said where there is room: the status bar's step keeps its short form's least, the window its own
        assert window.minimumSizeHint().width() == least, step


def test_every_frame_of_a_recording_shows_its_step_and_the_selection_comes_back(window, tmp_path, monkeypatch):
    counts = tokens_by_step(window.session.trace)
    window.session.select(step=1, layer=1)
    before = window.session.selection
    frames = []
    grab = window_animation.steady_grab            # each frame is the window as this grab gives it
    monkeypatch.setattr(window_animation, "steady_grab", lambda w: (frames.append(shown(w)), grab(w))[1])
    window_animation.record_window(window, tmp_path / "window.gif")
    assert len(frames) == len(counts)
    for step, state in enumerate(frames):
        assert_at_step(state, step, counts)
    assert window.session.selection == before
    assert_at_step(shown(window), 1, counts)
    frames.clear()
    asked = []
    with pytest.raises(AnimationCancelled):
        window_animation.record_window(window, tmp_path / "cancelled.gif",
                                       cancelled=lambda: asked.append(1) or len(asked) > 2)
    assert frames and window.session.selection == before
    assert_at_step(shown(window), 1, counts)


def test_a_translations_target_line_reads_what_was_chosen_by_the_step_selected(qtbot, translation):
    """The translator's Tokens line "Target …" at step k: the tokens chosen by then, the greedy translation's first
    k + 1 (TARGET after its <s>), not the whole translation beside step k's maps."""
    from explorer.app.panels import TokensPanel

    decoder, traces = translation
    trace, tokenizer = traces[-1], decoder.loaded.tokenizer
    session = Session()
    tokens = make(qtbot, session, TokensPanel)
    session.set_text_decoder(lambda ids: tokenizer.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True))
    session.set_tokens(tokenizer.encode(SOURCE))
    session.set_trace(trace)
    assert list(trace.token_text) == TARGET and trace.n_steps == len(TARGET)
    for step in (0, 3, 1, len(TARGET) - 2):
        session.select(step=step)
        line = tokens.translation.document.toPlainText()
        assert re.search(r"Target\s+(\S*)", line).group(1) == "".join(TARGET[1: step + 2]), (step, line)
