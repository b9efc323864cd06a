"""The head atlas's first raise at a long prompt (issue 22, "switching tabs never blocks for more than 100 ms"):
under a repeated-tokens score (induction, the default) the example is drawn on those tokens, which come with the
scores, so the raise computes and lays out no map of the long text meanwhile; once the scores come the example is
the selected head's pattern on the repeated tokens."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from explorer.app.panels.atlas import AtlasPanel
from explorer.app.state.session import Session
from explorer.views.maps import attention_matrix
from tests.app import test_atlas_long_prompt as long_prompt
from tests.app.synthetic_trace import build_trace

model, traces = long_prompt.model, long_prompt.traces          # a 1,100-token prompt, its maps on demand (fixtures)
LAYER, HEAD = 2, 3


def test_the_first_raise_draws_no_long_text_example_before_the_scores(qtbot, model, traces):
    prefill, _ = traces
    session = Session()
    session.set_model(model.info)
    session.set_trace(prefill)
    session.select(layer=LAYER, head=HEAD)
    panel = AtlasPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1000, 320)
    panel.show()                                                  # its first raise; the scores are asked
    assert panel.metric == "induction"
    assert panel.long_example.request is None and not panel.long_example.job.running, \
        "the long text's example map was computed before the scores came"
    repeated = build_trace(n_layers=4, n_heads=4, prompt_len=12)
    heads = np.arange(16, dtype=np.float64).reshape(4, 4) / 16
    panel._on_scores("long-llama", SimpleNamespace(trace=repeated, induction=heads, previous_token=heads,
                                                   sink=heads))
    np.testing.assert_array_equal(panel.example.image.image, attention_matrix(repeated, LAYER, HEAD))
