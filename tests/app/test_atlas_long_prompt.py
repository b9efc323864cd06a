"""The head atlas on a long prompt (maps rebuilt on demand from Q and K): the text's description is read
on a thread of its own, shown layer by layer under a progress bar, stopped by Cancel and read on by
Resume, kept for repaints and a step more, and never shown for a prompt it was not read from."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch
import transformers
from PySide6.QtCore import Qt

from explorer.app.panels.atlas import AtlasPanel
from explorer.core import head_description
from explorer.core.decode import Decoder, RecordOptions
from explorer.core.head_description import describe_heads
from explorer.core.runtime import from_tensors
from tests.core.conftest import FAMILIES, randomize

N = 1100                    # 1,100^2 entries: more than ON_DEMAND_FROM, so every prefill map is rebuilt on demand
LAYERS = 4


@pytest.fixture(scope="module")
def model():
    config_name, model_name, kwargs = FAMILIES["llama"]
    config = getattr(transformers, config_name)(**dict(kwargs, num_hidden_layers=LAYERS,
                                                      max_position_embeddings=N + 16))
    torch.manual_seed(3)
    hf = getattr(transformers, model_name)._from_config(config, attn_implementation="eager").eval()
    randomize(hf, 3)
    return from_tensors(hf.config.to_dict(), hf.state_dict(), name="long-llama")


def long_traces(loaded, shift: int = 0):
    """A prefill of N tokens and the same trace one decoding step longer."""
    decoder = Decoder(loaded, RecordOptions(), capacity=N + 4)
    prefill = decoder.prefill((np.arange(N) * 31 + shift) % 96)
    return prefill, decoder.step()


@pytest.fixture(scope="module")
def traces(model):
    return long_traces(model)


@pytest.fixture
def slow(monkeypatch):
    """Reading an on-demand record takes 0.15 s longer, so each layer is seen before the next; the threads
    that read are noted."""
    threads, read = set(), head_description.record_sums

    def slowed(record, positions, cancel=None):
        threads.add(threading.current_thread())
        if record.on_demand:
            time.sleep(0.15)
        return read(record, positions, cancel)

    monkeypatch.setattr(head_description, "record_sums", slowed)
    return threads


@pytest.fixture
def panel(open_panel, model):
    panel = open_panel(AtlasPanel, model.info, (1000, 320))
    panel.metric_box.setCurrentText("entropy")
    return panel


def finite_layers(panel) -> int:
    return int(np.isfinite(panel.map.image.image).all(axis=1).sum())


def read_all(qtbot, panel) -> None:
    qtbot.waitUntil(lambda: not panel.reader.running and panel.described.layers_done == LAYERS, timeout=30000)


def test_a_long_text_fills_in_layer_by_layer_from_a_thread_of_its_own(qtbot, panel, traces, slow, monkeypatch):
    prefill, _ = traces
    seen, captions, shown = [], {}, threading.Event()
    gated, reads = head_description.record_sums, []

    def after_the_window_saw_the_last(record, positions, cancel=None):
        """The next record is read once the window drew the one before: on a loaded machine the window's thread
        can lag the reader by more than a record (two layers then came in one repaint; CI, two workers)."""
        if threading.current_thread() is threading.main_thread() or not record.on_demand:
            return gated(record, positions, cancel)
        if reads:
            assert shown.wait(10), "the window never drew a layer read"
        shown.clear()
        reads.append(record)
        return gated(record, positions, cancel)
    monkeypatch.setattr(head_description, "record_sums", after_the_window_saw_the_last)
    panel.reader.progressed.connect(lambda: seen.append((finite_layers(panel), panel.progress.value(),
                                                         panel.progress.isVisible(), panel.map.image.image.copy())))
    panel.reader.progressed.connect(lambda: captions.setdefault(finite_layers(panel), panel.caption.text()))
    panel.reader.progressed.connect(shown.set)
    panel.session.set_trace(prefill)
    assert finite_layers(panel) == 0 and panel.progress.isVisible() and panel.cancel_button.text() == "Cancel"
    read_all(qtbot, panel)
    readers = set(slow)
    expected = describe_heads(prefill).entropy
    shown = [count for count, *_ in seen]
    assert shown == sorted(shown) and set(range(1, LAYERS)) <= set(shown)     # every layer came on its own
    for count, value, visible, image in seen:
        if count < LAYERS:
            assert value == count and visible
            np.testing.assert_allclose(image[:count], expected[:count], rtol=1e-6)
            assert np.isnan(image[count:]).all()                               # not read: empty, not a guess
    np.testing.assert_allclose(panel.map.image.image, expected, rtol=1e-6)
    assert threading.main_thread() not in readers and not panel.progress.isVisible()
    assert "so far" not in panel.caption.text() and "so far" in captions[LAYERS // 2]


def test_cancel_stops_the_reading_and_resume_reads_on(qtbot, panel, traces, slow):
    prefill, _ = traces
    panel.session.set_trace(prefill)
    qtbot.waitUntil(lambda: finite_layers(panel) >= 1, timeout=10000)
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert not panel.reader.running and panel.cancel_button.text() == "Resume"
    kept = panel.reader.sums.computed
    qtbot.wait(600)                                                              # 4 records' worth of reading
    assert panel.reader.sums.computed == kept < LAYERS                           # the thread stopped
    assert finite_layers(panel) == kept and "cancelled" in panel.progress.format()
    panel.refresh()
    assert not panel.reader.running                                              # a repaint does not restart it
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    read_all(qtbot, panel)
    np.testing.assert_allclose(panel.map.image.image, describe_heads(prefill).entropy, rtol=1e-6)
    assert panel.reader.sums.computed == LAYERS                                  # resumed, not read again


def test_what_was_read_is_kept_and_a_new_prompt_starts_empty(qtbot, panel, model, traces):
    prefill, longer = traces
    panel.session.set_trace(prefill)
    read_all(qtbot, panel)
    computed, started = panel.reader.sums.computed, panel.reader.started
    panel.refresh()
    panel.hide()
    panel.show()
    panel.metric_box.setCurrentText("distance")
    panel.metric_box.setCurrentText("entropy")
    assert (panel.reader.sums.computed, panel.reader.started) == (computed, started)
    np.testing.assert_allclose(panel.map.image.image, describe_heads(prefill).entropy, rtol=1e-6)

    panel.session.set_trace(longer)                                              # one step more: its rows alone
    assert panel.reader.sums.computed == computed + LAYERS and panel.reader.started == started
    np.testing.assert_allclose(panel.map.image.image, describe_heads(longer).entropy, rtol=1e-6)

    other, _ = long_traces(model, shift=5)
    panel.session.set_trace(other)
    assert finite_layers(panel) == 0                                             # nothing of the old prompt
    read_all(qtbot, panel)
    np.testing.assert_allclose(panel.map.image.image, describe_heads(other).entropy, rtol=1e-6)


def test_a_long_texts_example_map_is_drawn_from_the_background(qtbot, panel, traces):
    """The example of a long text: block maxima of the selected head, computed off the GUI thread."""
    import warnings

    from explorer.views.maps import attention_matrix

    prefill, _ = traces
    panel.session.set_trace(prefill)
    with qtbot.waitSignal(panel.long_example.shown, timeout=20000):
        panel.session.select(layer=2, head=3)
    f = panel.long_example.painted.factor
    dense = attention_matrix(prefill, 2, 3)                                      # (N, N), NaN where masked
    padded = np.full((-(-N // f) * f,) * 2, np.nan, dtype=np.float32)
    padded[:N, :N] = dense
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)                           # all-masked blocks: NaN
        expected = np.nanmax(padded.reshape(len(padded) // f, f, -1, f), axis=(1, 3))
    # float32 softmax rows summed in another order off the GUI thread: a few ulps, not 1e-6 of every weight
    np.testing.assert_allclose(panel.example.image.image, expected, rtol=1e-5)
    rect = panel.example.image.mapRectToParent(panel.example.image.boundingRect())
    assert (rect.width(), rect.height()) == (N, N)                               # over the real extent
    qtbot.wait(50)
    layout = panel.example_view.ci                                               # the map is not cut at the right
    assert layout.size().width() <= panel.example_view.viewport().width() + 1
    read_all(qtbot, panel)


def test_a_step_taken_while_reading_goes_on_with_the_same_reading(qtbot, panel, traces, slow):
    """Decoding during the reading: the next trace shares the prefill's records, so the reading is not
    started again, and the layers read show with the new row counted in."""
    prefill, longer = traces
    panel.session.set_trace(prefill)
    qtbot.waitUntil(lambda: finite_layers(panel) >= 1, timeout=10000)
    started = panel.reader.started
    panel.session.set_trace(longer)
    assert panel.reader.running and panel.reader.started == started
    done = finite_layers(panel)
    assert done >= 1
    expected = describe_heads(longer).entropy
    np.testing.assert_allclose(panel.map.image.image[:done], expected[:done], rtol=1e-6)
    read_all(qtbot, panel)
    assert panel.reader.started == started                                       # its new rows read on the spot
    np.testing.assert_allclose(panel.map.image.image, expected, rtol=1e-6)
