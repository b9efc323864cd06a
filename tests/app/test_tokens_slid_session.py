"""A session whose context slid ("Continue from the last N tokens?" Yes), saved and opened again (File ▸ Open
Session, or the relaunch's restore): the reopened window shows what the window showed before saving. The Tokens
panel lists the tokens the model ran (the trace's ids, not the typed prompt's), with the same note that the context
slid, and no panel says that the prompt was edited: the slid prefill does not end the typed prompt, so the replay's
trace was not recognised as the prompt's."""
from __future__ import annotations

import pytest

from explorer.app.state import session_file
from tests.app.test_session_decoded_ids import reopened
from tests.app.test_tokens_after_slide import TEXT, assert_rows_are_the_trace, stepped_until_slid, tokens_panel
from tests.app.window_helpers import idle, opened

pytestmark = pytest.mark.usefixtures("store_home")


def shown(panel) -> tuple[list[int], list, str]:
    rows = panel.rows
    return [rows[i].token_id for i in range(len(rows))], [rows[i].span for i in range(len(rows))], panel.formula


def test_a_slid_session_reopens_as_it_was_shown(qtbot, window, tiny, tmp_path, dialogs):
    opened(qtbot, window, tiny, TEXT)
    _, slid = stepped_until_slid(qtbot, window, dialogs)
    window.actions.step.trigger()                         # a step after the slide too
    slid = idle(qtbot, window, lambda: window.session.trace.n_steps == 2)
    before = shown(tokens_panel(window))
    assert "slid" in before[2] and window.session.out_of_date is None
    path = tmp_path / "slid.json"
    session_file.save(path, window.session_state())
    trace, other = reopened(qtbot, tmp_path, path)
    try:
        assert trace.token_ids.tolist() == slid.token_ids.tolist()
        assert other.session.out_of_date is None
        panel = tokens_panel(other)
        idle(qtbot, other)
        assert_rows_are_the_trace(panel, trace)
        assert shown(panel) == before
    finally:
        other.close()
