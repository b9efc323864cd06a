"""A session brings back exactly the tokens decoded (issue 22): a sampled decode whose seed or temperature was
changed after stepping reopens to the ids the person saw, not to what the sampling bar's settings draw now.
The person's forced tokens stay marked as theirs, and only theirs. A file written before the decoded ids were
saved replays as it always did (its steps sampled again), and a file whose ids do not fit its steps is refused
in one sentence naming the field.

The expectation is the window's own trace before saving, read from it, never from the file."""
from __future__ import annotations

import json

import pytest

from explorer.app.state import session_file
from explorer.app.state.session_file import SessionFileError, SessionState
from explorer.views.session_state import SamplingSettings
from tests.app.window_helpers import idle, new_window, opened, step

HOT = SamplingSettings(temperature=3.0, top_k=0, top_p=1.0, seed=5)    # near uniform: another seed draws others
OTHER_SEED = SamplingSettings(temperature=3.0, top_k=0, top_p=1.0, seed=6)


def seen(trace) -> tuple[list[int], list[int], list[bool]]:
    """What the window showed: every token id, the choice after each step, and which the person forced."""
    return (trace.token_ids.tolist(), [int(s.chosen_id) for s in trace.steps], [bool(s.forced) for s in trace.steps])


def reopened(qtbot, tmp_path, path, name="other.ini"):
    """Open the session file `path` in a fresh window; its trace once the replay is in, and the window."""
    other = new_window(qtbot, tmp_path, name)
    steps = json.loads(path.read_text())["steps"]
    other.menus.open_session_file(str(path))
    return idle(qtbot, other, lambda: other.session.trace is not None and other.session.trace.n_steps == steps), other


def a_decode_whose_seed_changed(qtbot, window, tiny):
    """Two sampled steps under HOT, a token the person forces (the window feeds it: a step more), then another
    seed on the bar."""
    window.sampling_bar.set_settings(HOT)
    opened(qtbot, window, tiny)
    step(qtbot, window, 2)
    window.session.requests.force_requested.emit(7)            # what the next-token panel does on a click
    trace = idle(qtbot, window, lambda: window.session.trace.n_steps == 4)
    window.sampling_bar.set_settings(OTHER_SEED)
    idle(qtbot, window)
    assert window.sampling_bar.settings() == OTHER_SEED
    return trace


def test_a_session_saved_after_the_seed_changed_reopens_to_the_tokens_decoded(qtbot, window, tiny, tmp_path,
                                                                             dialogs):
    before = a_decode_whose_seed_changed(qtbot, window, tiny)
    path = tmp_path / "saved.json"
    session_file.save(path, window.session_state())
    trace, other = reopened(qtbot, tmp_path, path)
    try:
        assert seen(trace) == seen(before)
        assert [s.forced for s in trace.steps] == [False, False, True, False]    # the person's only
        assert other.sampling_bar.settings() == OTHER_SEED
        assert not dialogs["warnings"]
    finally:
        other.close()


def test_a_file_without_decoded_ids_replays_as_before_and_so_draws_other_tokens(qtbot, window, tiny, tmp_path):
    """An older file keeps being read: its steps are sampled again under its settings (here the changed seed),
    which is why the ids must be saved: without them the person's tokens do not come back."""
    before = a_decode_whose_seed_changed(qtbot, window, tiny)
    body = json.loads(window.session_state().to_json())
    del body["decoded"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(body))
    trace, other = reopened(qtbot, tmp_path, path)
    try:
        assert trace.n_steps == before.n_steps and trace.steps[2].chosen_id == 7 and trace.steps[2].forced
        assert trace.token_ids.tolist() != before.token_ids.tolist()      # seed 6 draws others than seed 5 did
    finally:
        other.close()


def test_learns_way_back_restore_session_brings_back_the_tokens_decoded(qtbot, window, tiny):
    """window.restore_session (Learn's "Back to my session") on the state kept before another seed was set."""
    before = a_decode_whose_seed_changed(qtbot, window, tiny)
    state = window.session_state()
    step(qtbot, window)                                       # the window moves on, under the other seed
    window.restore_session(state)
    trace = idle(qtbot, window, lambda: window.session.trace.n_steps == before.n_steps)
    assert seen(trace) == seen(before)


# ----- the file's field -----------------------------------------------------------------------------------------
def test_decoded_ids_round_trip_and_an_old_file_reads_none():
    state = SessionState(model="m", prompt="hi", prompt_ids=(1, 2), sampling=HOT, forced=((1, 17),),
                         decoded=(4, 17, 9), steps=3)
    assert SessionState.from_json(state.to_json()) == state
    body = json.loads(state.to_json())
    assert body["decoded"] == [4, 17, 9]
    del body["decoded"]
    assert SessionState.from_json(json.dumps(body)).decoded == ()


@pytest.mark.parametrize("decoded, words", [
    ([4, 17], "field decoded holds 2 token ids for 3 steps, not one per step"),
    ([], "field decoded holds 0 token ids for 3 steps"),
    ([4, 17, 9, 1], "field decoded holds 4 token ids for 3 steps"),
    ("4 17 9", "field decoded is '4 17 9', not a list of token ids"),
    ([4, "17", 9], "field decoded[1] is '17', not a whole number"),
    ([4, -1, 9], "field decoded[1] is -1, not between"),
    ([4, 18, 9], "field forced[0] forces token 17 at step 1, but field decoded[1] is 18"),
    (list(range(10**6)), "field decoded holds 1,000,000 token ids for 3 steps"),
])
def test_decoded_ids_that_do_not_fit_are_refused_in_one_sentence(tmp_path, decoded, words):
    body = json.loads(SessionState(prompt="hi", prompt_ids=(1, 2), forced=((1, 17),), steps=3).to_json())
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**body, "decoded": decoded}))
    with pytest.raises(SessionFileError) as error:
        session_file.load(path)
    message = str(error.value)
    assert words in message and str(path) in message
    assert "\n" not in message and len(message) < 300 and message.count(". ") == 0


def test_a_state_built_with_ids_that_do_not_fit_its_steps_is_an_error():
    with pytest.raises(SessionFileError, match="2 decoded token ids for 3 steps"):
        SessionState(decoded=(1, 2), steps=3)
