"""A session saved after its prompt was edited, and not run, comes back as it was: the trace of the prompt that
ran, out of date beside the edited text (drive29: a relaunch took the edited 26,667-token prompt for the trace's,
called every one of the old prompt's tokens "generated" and said that the context slid). The expectation is the
window's own state before saving: its trace, its editor and its out-of-date reason."""
from __future__ import annotations

from explorer.app.panels.tokens import TokensPanel
from explorer.app.state import session_file
from explorer.app.state.freshness import EDITED
from tests.app.window_helpers import idle, new_window, opened, step

EDITED_TEXT = "Shall I compare thee to a summer's day? Thou art more lovely and more temperate"


def test_a_session_saved_with_an_edited_prompt_reopens_out_of_date(qtbot, window, tiny, tmp_path, dialogs):
    opened(qtbot, window, tiny)
    before = step(qtbot, window, 2)
    window.prompt.set_text(EDITED_TEXT)
    idle(qtbot, window, lambda: window.session.out_of_date is not None)
    assert window.session.trace is before and window.session.out_of_date == EDITED
    path = tmp_path / "edited.json"
    session_file.save(path, window.session_state())

    other = new_window(qtbot, tmp_path, "other.ini")
    try:
        other.menus.open_session_file(str(path))
        trace = idle(qtbot, other, lambda: other.session.trace is not None and other.session.trace.n_steps == 3)
        assert trace.token_ids.tolist() == before.token_ids.tolist()
        assert other.prompt.text == EDITED_TEXT
        assert other.session.out_of_date == EDITED, "the old prompt's trace was shown as the edited prompt's"
        tokens = other.findChild(TokensPanel, "tokens")
        tokens.refresh()
        live = other.session.tokens.ids
        assert not tokens.rows.slid and tokens.rows.ids.tolist() == list(live), "the rows are not the edited prompt's"
        other.actions.step.trigger()                         # a step now runs the edited prompt, as before saving
        after = idle(qtbot, other, lambda: other.session.out_of_date is None)
        assert after.token_ids.tolist()[:len(live)] == list(live)
        assert not dialogs["warnings"]
    finally:
        other.close()


def test_the_crash_offer_does_not_pair_an_edited_prompt_with_the_tokens_decoded_before(qtbot, dialogs):
    """drive29b: "a 120,003-character prompt, 3 decoded tokens", when the 3 tokens followed another prompt."""
    from explorer.app.window import crash_restore
    from explorer.views.session_state import SessionState

    crash_restore.ask(None, SessionState(model="m", prompt="x" * 20, prompt_ids=(1, 2), steps=4, edited=True))
    crash_restore.ask(None, SessionState(model="m", prompt="x" * 20, prompt_ids=(1, 2), steps=4))
    edited, plain = dialogs["questions"]
    assert "a 20-character prompt, edited after a run of 3 decoded tokens)?" in edited, edited
    assert "a 20-character prompt, 3 decoded tokens)?" in plain, plain
