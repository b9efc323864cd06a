"""A click on an attention cell is one selection: Show the work derives that cell from `session.selection`
alone, whichever panel subscribed first, and a selection of another token leaves the clicked key behind.
The model is the tiny random llama of tests/core/tiny_checkpoints.py run through the real core; the expected
A_ij is softmax(q_i·K^T/√d)_j written out here from the recorded Q and K."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.panels.attention import AttentionPanel
from explorer.app.panels.derivation import DerivationPanel
from explorer.app.state.session import Session

LAYER, HEAD, ROW, COLUMN = 1, 1, 6, 2


def traced():
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.tiny_checkpoints import LLAMA_CONFIG, llama_tensors

    config = dict(LLAMA_CONFIG, vocab_size=96)
    loaded = from_tensors(config, llama_tensors(config, seed=2), name="tiny-llama")
    decoder = Decoder(loaded)
    decoder.prefill(np.arange(8) * 7 % 90)
    return loaded, decoder.trace


def expected_row(trace, row: int) -> np.ndarray:
    q = trace.q(LAYER, HEAD)[row].astype(np.float64)
    s = trace.k(LAYER, trace.kv_head_of(HEAD))[: row + 1].astype(np.float64) @ q / np.sqrt(q.shape[0])
    return np.exp(s - s.max()) / np.exp(s - s.max()).sum()


def shown_panels(qtbot, derivation_first: bool):
    loaded, trace = traced()
    session = Session()
    session.set_model(loaded.info)
    kinds = (DerivationPanel, AttentionPanel) if derivation_first else (AttentionPanel, DerivationPanel)
    panels = {}
    for kind in kinds:                                  # the order in which they subscribe to the session
        panel = panels[kind] = kind(session)
        qtbot.addWidget(panel)
        panel.resize(900, 500)
        panel.show()
        qtbot.waitExposed(panel)
    session.set_trace(trace)
    session.select(layer=LAYER, head=HEAD, token=3)
    return session, trace, panels[AttentionPanel], panels[DerivationPanel]


@pytest.mark.parametrize("derivation_first", [True, False])
def test_a_click_on_an_attention_cell_is_derived_from_the_selection(qtbot, derivation_first):
    session, trace, attention, derivation = shown_panels(qtbot, derivation_first)
    raised = []
    session.requests.cell_requested.connect(lambda row, column: raised.append((row, column)))
    attention._click_large(ROW, COLUMN)
    assert session.selection.cell == (ROW, COLUMN) and raised == [(ROW, COLUMN)]
    assert derivation.cell == (ROW, COLUMN)
    assert derivation.derived.weight == pytest.approx(expected_row(trace, ROW)[COLUMN], abs=1e-5)


def test_another_token_drops_the_key_clicked_in_the_old_row(qtbot):
    session, trace, attention, derivation = shown_panels(qtbot, derivation_first=False)
    attention._click_large(ROW, COLUMN)
    session.select(token=ROW - 1)
    largest = int(np.argmax(expected_row(trace, ROW - 1)))
    assert session.selection.key is None and derivation.cell == (ROW - 1, largest)
