"""The Tokens panel's coloured text draws a generated token's spaces as the typed text's: SmolLM2 at 1920 drew
the prompt "She went to the market" with spaces and the tokens it generated as "and␣bought␣a␣few". Checked
against the tokenizer's own bytes: the drawn text is the prompt, then each generated token's bytes as UTF-8."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

from explorer.app.panels.tokens import TokensPanel
from explorer.app.state.session import Session
from explorer.core.tokens import visible
from tests.app.shared_window import make
from tests.app.synthetic_trace import WORDS, build_trace
from tests.app.test_token_text import drawn_characters


def _as_the_model_writes(trace):
    """The trace with display strings as a real run records them (a space as '␣'), not the synthetic words."""
    steps = tuple(dataclasses.replace(s, token_text=tuple(visible(WORDS[int(i)]) for i in s.token_ids))
                  for s in trace.steps)
    return dataclasses.replace(trace, steps=steps)


def test_generated_tokens_draw_their_spaces_as_the_prompt_does(qtbot):
    trace = _as_the_model_writes(build_trace(prompt_len=4, steps=4))
    ids = np.asarray(trace.token_ids)
    prompt = [WORDS[int(i)] for i in ids[:4]]
    starts = np.cumsum([0] + [len(t) for t in prompt])
    live = SimpleNamespace(ids=ids[:4], text=tuple(visible(t) for t in prompt),
                           spans=tuple((int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])),
                           special=np.zeros(4, bool), raw=tuple(t.encode() for t in prompt), source="".join(prompt))
    session = Session()
    session.set_token_bytes(lambda token_id: WORDS[token_id].encode())      # the tokenizer's bytes of each id
    panel = make(qtbot, session, TokensPanel)
    session.set_tokens(live)
    session.set_trace(trace)
    generated = "".join(WORDS[int(i)] for i in ids[4:])
    assert " " in generated and len(panel.rows) == len(ids)
    drawn = drawn_characters(panel.text_view.document())
    assert drawn == live.source + generated, drawn
    assert "␣" not in drawn
    assert "␣" in "".join(panel.rows[i].text for i in range(4, len(ids)))   # the table still shows its '␣'
