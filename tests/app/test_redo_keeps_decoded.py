"""A new record dtype redoes the run, and the tokens the person saw stay (issue 22): the redo sampled the steps
again under the sampling bar's settings of now, so after a seed or temperature change for the steps to come,
Decode > Record the trace in float16 showed other tokens than the ones decoded. A dtype changes what is recorded,
never what the model chose. The expectation is the window's own trace before the change, read from it."""
from __future__ import annotations

import numpy as np

from explorer.views.session_state import SamplingSettings
from tests.app.window_helpers import idle, opened, step

HOT = SamplingSettings(temperature=3.0, top_k=0, top_p=1.0, seed=5)    # near uniform: another seed draws others
OTHER_SEED = SamplingSettings(temperature=3.0, top_k=0, top_p=1.0, seed=6)


def recorded_in(trace) -> np.dtype:
    return trace.steps[0].layers[0].attn.weights.dtype


def test_a_record_dtype_change_keeps_the_sampled_tokens(qtbot, window, tiny):
    window.sampling_bar.set_settings(HOT)
    opened(qtbot, window, tiny)
    before = step(qtbot, window, 3)
    window.sampling_bar.set_settings(OTHER_SEED)                # for the steps to come
    idle(qtbot, window)
    assert window.session.trace is before, "a sampling change alone redid the run"
    window.menus.half_trace.trigger()                           # Decode > Record the trace in float16
    after = idle(qtbot, window, lambda: recorded_in(window.session.trace) == np.float16)
    assert [int(s.chosen_id) for s in after.steps] == [int(s.chosen_id) for s in before.steps]
    assert after.token_ids.tolist() == before.token_ids.tolist()
    assert not any(s.forced for s in after.steps), "the sampler's tokens became the person's forced ones"
    stepped = step(qtbot, window)                               # decoding goes on under the seed now set
    assert stepped.token_ids.tolist()[:before.n_tokens] == before.token_ids.tolist()


def test_experiments_decide_the_sampled_steps_again_and_off_brings_the_tokens_back(qtbot, window, tiny):
    """Experiments are a branch: its sampled steps are the changed model's choices, drawn at each position from
    the same (seed, position) numbers (core.sampling); with the experiments off again the run's tokens return."""
    from explorer.core.intervention import HeadAblation, Intervention, Kernel, KernelChoice

    window.sampling_bar.set_settings(HOT)
    opened(qtbot, window, tiny)
    before = step(qtbot, window, 3)
    window.session.add_experiment(Intervention(kernels=(KernelChoice(Kernel("relu")),),
                                               ablations=(HeadAblation(0, 0),)))
    branched = idle(qtbot, window, lambda: window.session.trace.steps[0].layers[0].attn.kernel == Kernel("relu"))
    assert branched.n_steps == before.n_steps and not any(s.forced for s in branched.steps)
    assert branched.token_ids.tolist() != before.token_ids.tolist(), "the branch kept the tokens of the plain model"
    window.session.set_experiments(())
    back = idle(qtbot, window, lambda: window.session.trace.steps[0].layers[0].attn.kernel == Kernel())
    assert back.token_ids.tolist() == before.token_ids.tolist()
