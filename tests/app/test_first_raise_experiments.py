"""The Experiments tab's first raise (issue 22, "switching tabs never blocks for more than 100 ms") builds no map
for the Activation patching tab behind it, which stays empty until a map is run; a map run then is drawn as the
share of the clean-corrupted gap each patch recovers."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from tests.app.test_patching_empty_state import experiments_panel


def test_the_first_raise_builds_no_patching_map_and_a_result_draws_it(qtbot):
    panel = experiments_panel(qtbot, 3, 4)
    panel.resize(1200, 400)
    panel.show()
    assert getattr(panel.patching, "_heatmap", "built") is None, "the hidden patching map was built at the raise"
    values = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, 1.5, 2.5, 3.5], [4.0, 3.0, 2.0, 1.0]])
    result = SimpleNamespace(values=values, clean=4.0, corrupt=1.0, site="head", metric="logit_diff", complete=True)
    panel.patching._on_finished(result)
    np.testing.assert_allclose(panel.patching.heatmap.image.image, (values - 1.0) / (4.0 - 1.0))
    assert panel.patching.heatmap.shape == (3, 4)
