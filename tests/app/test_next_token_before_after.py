"""The Next token panel shows the top-k without the experiments beside the trace's, with KL and the
chosen token's change of logit, from the comparison the session hands on (the Experiments dock's)."""
from __future__ import annotations

import pytest
import torch

from explorer.app.panels.next_token import NextTokenPanel
from explorer.app.state.session import Session
from explorer.core.intervention import Experiment, HeadAblation, Intervention, active


@pytest.fixture
def panel(qtbot, traced_llama):
    session = Session()
    session.set_model(traced_llama[0].info)
    session.set_token_display(lambda token_id: f"t{token_id}")
    panel = NextTokenPanel(session)
    qtbot.addWidget(panel)
    panel.resize(700, 500)
    panel.show()
    qtbot.waitExposed(panel)
    session.set_trace(traced_llama[1])
    return panel


def _compare(traced_llama, intervention):
    from explorer.core.experiments import compare_next_token

    return compare_next_token(traced_llama[0], traced_llama[1].token_ids, intervention, 8)


def test_with_an_experiment_on_and_its_comparison_both_columns_are_shown(qtbot, panel, traced_llama):
    session, trace = panel.session, traced_llama[1]
    session.set_experiments((Experiment(Intervention(ablations=(HeadAblation(1, 2),))),))
    assert not panel.before_table.isVisible()                     # no comparison yet
    result = _compare(traced_llama, active(session.experiments))
    session.set_comparison(active(session.experiments), trace.token_ids, result)
    assert panel.before_table.isVisible() and panel.table.isVisible() and panel.compare_label.isVisible()
    # the left column is the model without the experiments: the unintervened trace's own top-k
    ids, probs = trace.candidates(trace.n_tokens - 1)
    shown = [panel.before_table.item(r, 0).text() for r in range(panel.before_table.rowCount())]
    assert shown == [f"t{int(i)}" for i in ids[:len(shown)]] and len(shown) == 8
    assert float(panel.before_table.item(0, 1).text()) == pytest.approx(float(probs[0]), abs=1e-4)
    # KL(p || q) = sum p log(p / q) over the vocabulary, from the two logits the formula needs
    from explorer.core.experiments import next_logits

    p = torch.log_softmax(next_logits(traced_llama[0], trace.token_ids, None).double(), -1)
    q = torch.log_softmax(next_logits(traced_llama[0], trace.token_ids, active(session.experiments)).double(), -1)
    kl = float((p.exp() * (p - q)).sum())
    assert kl > 0 and f"KL(before ‖ after) = {kl:.4f}" in panel.compare_label.text()
    assert f"Δ {result.logit_after - result.logit_before:+.3f}" in panel.compare_label.text()
    assert panel.table.horizontalHeaderItem(1).text() == "after"


def test_an_experiment_turned_off_or_a_stale_comparison_shows_one_column(qtbot, panel, traced_llama):
    session, trace = panel.session, traced_llama[1]
    ablate = Intervention(ablations=(HeadAblation(0, 1),))
    session.set_experiments((Experiment(ablate),))
    session.set_comparison(ablate, trace.token_ids, _compare(traced_llama, ablate))
    assert panel.before_table.isVisible()
    session.set_experiments((Experiment(ablate, on=False),))     # nothing on: nothing to compare
    assert not panel.before_table.isVisible() and not panel.compare_label.isVisible()
    session.set_experiments((Experiment(Intervention(ablations=(HeadAblation(1, 3),))),))
    assert not panel.before_table.isVisible()                     # the comparison is of another experiment
    session.select(token=2)                                       # and of the last position only
    session.set_experiments((Experiment(ablate),))
    assert not panel.before_table.isVisible()
    session.select(token=trace.n_tokens - 1)
    assert panel.before_table.isVisible()


def test_a_trace_run_under_experiments_says_so_before_its_comparison_comes(qtbot, panel, traced_llama):
    """An Alt-click ablation on Gemma at 312 tokens: for ~40 s the panel showed the ablated probabilities as the
    model's own, the before → after header arriving only with the comparison (drive 21 m20)."""
    from explorer.core.decode import Decoder

    session, plain = panel.session, traced_llama[1]
    ablate = Intervention(ablations=(HeadAblation(1, 2),))
    session.set_experiments((Experiment(ablate),))
    assert not panel.compare_label.isVisible() and not panel.waiting_line.isVisible(), \
        "the plain trace is still the one drawn"
    decoder = Decoder(traced_llama[0])
    decoder.set_intervention(ablate)
    decoder.prefill(plain.token_ids)
    session.set_trace(decoder.trace)                               # the trace redone under the ablation arrives
    said = panel.waiting_line.text()
    assert panel.waiting_line.isVisible() and "with experiments" in said and "ablate L1.H2" in said, said
    assert not panel.before_table.isVisible()                      # no comparison yet: nothing to put beside
    # the candidates drawn are the ablated run's: the comparison's "after", computed apart
    result = _compare(traced_llama, ablate)
    assert float(panel.table.item(0, 3).text()) == pytest.approx(float(result.after_probs[0]), abs=1e-4)
    assert float(panel.table.item(0, 3).text()) != pytest.approx(float(result.before_probs[0]), abs=1e-4)
    session.set_comparison(ablate, decoder.trace.token_ids, result)
    assert panel.before_table.isVisible() and "KL(before ‖ after)" in panel.compare_label.text()


def rows_in_sight(table) -> int:
    view = table.viewport().rect()
    return sum(1 for row in range(table.rowCount()) if view.contains(table.visualItemRect(table.item(row, 1))))


def test_the_waiting_words_take_one_line_not_the_candidates_rows(qtbot, panel, traced_llama):
    """In a dock as narrow as Next token's beside Learn at 1366x768 the wrapped waiting words took two or three
    of the candidates' rows for the whole wait (issue 22). Expectation from the widgets' own geometry: while the
    before → after waits, the words are one line of the font, and the candidates lose at most that line's
    row."""
    from explorer.core.decode import Decoder

    session, plain = panel.session, traced_llama[1]
    panel.resize(300, 330)
    qtbot.wait(50)
    before = rows_in_sight(panel.table)
    ablate = Intervention(ablations=(HeadAblation(1, 2),))
    session.set_experiments((Experiment(ablate),))
    decoder = Decoder(traced_llama[0])
    decoder.set_intervention(ablate)
    decoder.prefill(plain.token_ids)
    session.set_trace(decoder.trace)
    qtbot.wait(50)
    line = panel.waiting_line
    assert line.isVisible() and len(line.text()) > 60, line.text()     # words that wrapped at this width
    assert line.height() <= line.fontMetrics().lineSpacing() + 2 * line.margin() + 4, line.height()
    assert rows_in_sight(panel.table) >= before - 1 >= 2, (before, rows_in_sight(panel.table))
