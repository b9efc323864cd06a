"""Structure-aware fuzzing of session files: every mutation of a valid session either reads back as a
SessionState whose fields have their declared types and ranges, or is refused with one SessionFileError of
one line that names the file. Nothing else escapes (no TypeError, AttributeError or RecursionError).

Each example replaces one field (or one field of the sampling settings or of an experiment) of a good
session with a hostile JSON value: a wrong type, NaN, an infinity, a huge number, a lone surrogate,
nesting. Derandomized and bounded, so the run is the same every time and takes seconds.
"""
from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.core.intervention import Experiment, Intervention
from explorer.core.intervention_parts import HeadAblation, Kernel, KernelChoice
from explorer.core.sampling_settings import Sampling
from explorer.views.session_state import SessionFileError, SessionState

SOURCE = "fuzzed.json"
GOOD = SessionState(model="shakespeare-gqa", prompt="To be", prompt_ids=(1, 2, 3), sampling=Sampling(0.7, 5, 0.9, 3),
                    forced=((1, 4),), steps=3, experiments=(Experiment(Intervention(
                        kernels=(KernelChoice(Kernel("exp", 2.0), (0, 1)),),
                        ablations=(HeadAblation(1, 2),))),))
BODY = json.loads(GOOD.to_json())

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                    st.sampled_from(["\udc80", "a\ud800b", "NaN", "1e400", "-1", "float16", "cpu"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=12)
PATHS = ([(key,) for key in BODY if key not in ("format",)] + [("sampling", key) for key in BODY["sampling"]]
         + [("experiments", 0, "intervention", "ablations", 0, key) for key in ("layer", "head", "mode")]
         + [("experiments", 0, "intervention", "kernels", 0, "kernel", "temperature"),
            ("experiments", 0, "intervention", "kernels", 0, "layers"), ("experiments", 0, "on")])


def mutated(path, value) -> str:
    body = json.loads(json.dumps(BODY))
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(body, ensure_ascii=True)     # NaN and Infinity as Python's json writes them


def assert_well_typed(state: SessionState) -> None:
    assert state.model is None or isinstance(state.model, str)
    assert isinstance(state.prompt, str) and state.prompt.encode("utf-8")
    assert all(type(i) is int and i >= 0 for i in state.prompt_ids)
    assert all(type(s) is int and type(t) is int for s, t in state.forced)
    assert type(state.steps) is int and state.steps >= 0
    sampling = state.sampling
    assert math.isfinite(sampling.temperature) and sampling.temperature >= 0
    assert 0 < sampling.top_p <= 1 and type(sampling.top_k) is int and 0 <= sampling.seed < 2**63
    for experiment in state.experiments:
        for ablation in experiment.intervention.ablations:
            assert type(ablation.layer) is int and type(ablation.head) is int
        for choice in experiment.intervention.kernels:
            assert math.isfinite(choice.kernel.temperature) and choice.kernel.temperature > 0


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.sampled_from(PATHS), value=values)
def test_every_mutated_session_is_read_well_typed_or_refused_in_one_line(path, value):
    text = mutated(path, value)
    try:
        state = SessionState.from_json(text, source=SOURCE)
    except SessionFileError as error:
        message = str(error)
        assert message.startswith(SOURCE) and "\n" not in message and len(message) < 400, message
        return
    assert_well_typed(state)


def test_the_unmutated_session_reads_back_equal():
    assert SessionState.from_json(GOOD.to_json(), source=SOURCE) == GOOD
