"""Why this token and the residual stream explain the run as it was made: under the experiments that are on
(drive23 S1). With a head ablated, the run the panels stand beside is the ablated one, and these two panels
asked the model as it is, saying nothing. Expectation, independent of the panels: the core's attribution and
residual stream under the same Intervention (each checked against transformers in tests/core), which differ
from the plain model's."""
from __future__ import annotations

import numpy as np

from explorer.app.panels.attribution import AttributionPanel
from explorer.app.panels.residual import ResidualPanel
from explorer.core.attribution import attribute, residual_stream
from explorer.core.intervention import Intervention
from tests.app.why_helpers import answered

ABLATED = Intervention().ablate(0, 1).ablate(1, 2)


def test_why_this_token_splits_the_logit_of_the_ablated_run(qtbot, session, traced_llama):
    loaded, trace = traced_llama
    session.set_experiments(())
    session.add_experiment(ABLATED)
    panel = answered(qtbot, AttributionPanel, session, traced_llama)
    under = attribute(loaded, trace.token_ids, trace.n_tokens - 1, intervention=ABLATED)
    plain = attribute(loaded, trace.token_ids, trace.n_tokens - 1)
    shown = panel.heads.image.image
    np.testing.assert_allclose(shown, np.concatenate([under.heads, under.mlp[:, None]], axis=1), rtol=1e-6)
    assert not np.allclose(shown, np.concatenate([plain.heads, plain.mlp[:, None]], axis=1), rtol=1e-3)
    assert under.heads[0, 1] == 0.0 and under.heads[1, 2] == 0.0          # the ablated heads add nothing
    assert f"z = {under.logit:.3f}" in panel.caption.text() and "with experiments" in panel.caption.text()


def test_the_residual_stream_reads_the_ablated_run(qtbot, session, traced_llama):
    loaded, trace = traced_llama
    session.add_experiment(ABLATED)
    panel = answered(qtbot, ResidualPanel, session, traced_llama)
    under = residual_stream(loaded, trace.token_ids, trace.n_tokens - 1, intervention=ABLATED)
    plain = residual_stream(loaded, trace.token_ids, trace.n_tokens - 1)
    np.testing.assert_allclose(panel.stream.attn_norms, under.attn_norms, rtol=1e-5)
    np.testing.assert_allclose(panel.stream.residual_norms, under.residual_norms, rtol=1e-5)
    assert not np.allclose(under.attn_norms, plain.attn_norms, rtol=1e-3)
    assert "with experiments" in panel.formula


def test_with_the_experiments_off_both_read_the_model_as_it_is(qtbot, session, traced_llama):
    loaded, trace = traced_llama
    session.add_experiment(ABLATED)
    session.set_experiments(tuple(e.__class__(e.intervention, on=False) for e in session.experiments))
    panel = answered(qtbot, ResidualPanel, session, traced_llama)
    plain = residual_stream(loaded, trace.token_ids, trace.n_tokens - 1)
    np.testing.assert_allclose(panel.stream.attn_norms, plain.attn_norms, rtol=1e-5)
    assert "with experiments" not in panel.formula
