"""A decoding step at a long prompt adds one token label (issue 22): a token axis given its labels again with one
more lays itself out as an axis given them all at once, but looks at the new label alone, and the Embeddings panel
makes the new row's label alone. The work is counted in Python calls (a per-label loop shows as thousands of them),
never timed."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from explorer.app.panels import EmbeddingsPanel
from explorer.app.state.session import Session
from explorer.app.widgets import token_labels
from explorer.drawing.heatmap_axes import TokenAxis
from explorer.views.maps import short_label
from tests.app.shared_window import make

N = 4000


def python_calls(action) -> int:
    """How many Python functions `action` runs (each resumption of a generator counts too): work done per label
    of thousands shows as thousands of calls."""
    calls = 0

    def count(_frame, event, _arg) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        action()
    finally:
        sys.setprofile(None)
    return calls


def labels(n: int, wide_from: int | None = None) -> list[str]:
    """n token labels, made anew (equal strings, not the same objects); from `wide_from` on, much wider ones."""
    return [f"{i} {'a-much-wider-token-label' if wide_from is not None and i >= wide_from else f't{i % 97}'}"
            for i in range(n)]


def layout(axis: TokenAxis, n: int) -> tuple:
    """What the axis draws and the room it takes: its size, the ticks it labels over n rows and their texts."""
    length = 600.0
    values = axis.tickValues(-0.5, n - 0.5, length)[0][1]
    return (axis.minimumWidth(), axis.maximumWidth(), axis.minimumHeight(), axis.maximumHeight(),
            axis._needed_px(), values, axis.tickStrings(values, 1.0, 1.0))


@pytest.mark.parametrize("orientation", ["left", "top"])
def test_an_axis_given_one_more_label_at_a_time_is_the_axis_given_them_all_at_once(qtbot, orientation):
    grown = TokenAxis(orientation)
    grown.set_labels(labels(N))
    for n in range(N + 1, N + 4):                               # three steps, the last one's label the widest
        grown.set_labels(labels(n, wide_from=N + 2))
    fresh = TokenAxis(orientation)
    fresh.set_labels(labels(N + 3, wide_from=N + 2))
    assert layout(grown, N + 3) == layout(fresh, N + 3)
    # Labels that are no extension (another prompt, narrower): measured anew, not kept from the wider ones.
    for axis in (grown, fresh):
        axis.set_labels(labels(N // 2))
    assert layout(grown, N // 2) == layout(fresh, N // 2)
    other = TokenAxis(orientation)
    other.set_labels(labels(N // 2))
    assert layout(grown, N // 2) == layout(other, N // 2)


def test_one_more_label_costs_the_same_at_4000_labels_as_at_40():
    def step_calls(n: int) -> int:
        axis = TokenAxis("left")
        axis.set_labels(labels(n))
        one_more = labels(n + 1)
        return python_calls(lambda: axis.set_labels(one_more))

    assert step_calls(N) == step_calls(40)


@pytest.fixture(scope="module")
def decoder():
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model("llama")
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=1200), hf_model.state_dict())
    decoder = Decoder(loaded, RecordOptions(), capacity=1100)
    decoder.prefill(np.arange(1000) % 96)
    return decoder


def test_a_step_makes_the_embeddings_label_of_its_own_row_alone(qtbot, decoder, monkeypatch):
    session = Session()
    session.set_token_display(lambda token_id: f"t{token_id}")
    panel = make(qtbot, session, EmbeddingsPanel)
    session.set_trace(decoder.trace)
    made = []
    numbered = token_labels.numbered_label
    monkeypatch.setattr(token_labels, "numbered_label", lambda i, text: made.append(i) or numbered(i, text))
    for _ in range(3):
        session.set_trace(decoder.step())
    trace = decoder.trace
    assert made == [trace.n_tokens - 3, trace.n_tokens - 2, trace.n_tokens - 1]
    expected = [f"{i} {short_label(text)}" for i, text in enumerate(trace.token_text)]
    axis = panel.heatmap.axes["left"]
    assert axis._labels == expected
    fresh = make(qtbot, session, EmbeddingsPanel)               # drawn once, from the last trace
    assert layout(axis, trace.n_tokens) == layout(fresh.heatmap.axes["left"], trace.n_tokens)
