"""The KV lab panel: the variant table and plot from a config or a loaded model, exports, and the what-if runner."""
from __future__ import annotations

import csv
import io
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from explorer.app.panels.kv_lab import model_backend
from explorer.core import kv_variants as kv
from explorer.core.errors import ExplorerError
from tests.app.synthetic_trace import build_trace

CONFIGS = Path(__file__).resolve().parents[2] / "resources" / "configs"


def table_column(panel, column: int) -> list[str]:
    return [panel.table.item(row, column).text() for row in range(panel.table.rowCount())]


def test_a_config_only_model_fills_the_table_and_marks_its_native_variant(kv_lab):
    assert kv_lab.open_config(str(CONFIGS / "deepseek-v2"))
    names = table_column(kv_lab, 0)
    assert len(names) == 9 and names[-1] == "mla-512 ★ native"
    assert sum("native" in name for name in names) == 1
    assert kv_lab.table.item(8, 2).text() == "576"
    assert kv_lab.tokens_box.value() == 163840
    for dtype, itemsize in (("float32", 4), ("bfloat16", 2), ("int8", 1)):
        curves = kv_lab.plot.curves(dtype)
        assert len(curves) == 9
        native = [c for c in curves if c.variant_name.endswith("(native)")]
        assert [c.variant_name for c in native] == ["mla-512 (native)"]
        assert native[0].opts["pen"].width() == 4
        x, y = native[0].getData()
        assert x[-1] == 163840
        assert y[-1] * kv_lab.plot.unit == pytest.approx(576 * 60 * itemsize * 163840)
    assert len(kv_lab.plot.legend.items) == 9                      # one legend, not one per dtype
    # The table is the panel's legend (each row leads with its curve's pen: test_kv_clipping.py), and the
    # tokens axis has at most three labels (they ran together at 2,000-token steps).
    view = kv_lab.plot
    kv_lab.resize(1300, 900)                                     # the width of the default layout's bottom docks
    QApplication.processEvents()
    for dtype in ("float32", "bfloat16", "int8"):
        ticks = view.plots[dtype].getAxis("bottom").tickValues(0, 163840, 130)
        assert sum(len(values) for spacing, values in ticks[:1]) <= 3


def test_dtype_scales_the_totals_and_ranks_add_mla_rows(kv_lab):
    kv_lab.open_config(str(CONFIGS / "llama3-70b"))
    kv_lab.tokens_box.setValue(1000)
    float32 = {r.variant.name: r.bytes_total for r in kv_lab.rows()}
    kv_lab.dtype_box.setCurrentText("int8")
    int8 = {r.variant.name: r.bytes_total for r in kv_lab.rows()}
    assert float32["gqa-8"] == 4 * int8["gqa-8"] == 4 * 2048 * 80 * 1000
    kv_lab.ranks_edit.setText("100, 200")
    kv_lab.ranks_edit.editingFinished.emit()
    assert [n for n in table_column(kv_lab, 0) if n.startswith("mla")] == ["mla-100", "mla-200"]


def test_the_loaded_model_is_used_until_a_config_is_opened(kv_lab, bare_session):
    bare_session.set_model(build_trace(n_layers=3, n_heads=4, n_kv_heads=2).model)
    assert kv_lab.source_label.text() == bare_session.model.name
    assert [n for n in table_column(kv_lab, 0) if "native" in n] == ["gqa-2 ★ native"]
    assert kv_lab.variant_box.findText("gqa-2") == -1 and kv_lab.variant_box.findText("mqa") >= 0


def test_a_bad_config_is_one_sentence_and_keeps_the_table(kv_lab, bare_session, tmp_path, qtbot):
    kv_lab.open_config(str(CONFIGS / "gemma3-27b"))
    before = table_column(kv_lab, 0)
    with qtbot.waitSignal(bare_session.error_raised) as signal:
        assert not kv_lab.open_config(str(tmp_path / "missing"))
    assert "does not exist" in signal.args[0]
    assert table_column(kv_lab, 0) == before


def test_exports_table_csv_and_plot_png_svg(kv_lab, tmp_path):
    kv_lab.open_config(str(CONFIGS / "gemma3-27b"))
    kv_lab.tokens_box.setValue(4096)
    table = list(csv.DictReader(io.StringIO(kv_lab.save_table_csv(tmp_path / "t.csv").read_text())))
    assert table == list(csv.DictReader(io.StringIO(kv.to_csv(kv_lab.rows()))))
    assert [r["variant"] for r in table if r["native"] == "True"] == ["gqa-16"]
    image = QImage(str(kv_lab.save_plot(tmp_path / "p.png", 640, 480)))
    assert (image.width(), image.height()) == (640, 480)
    curves = kv_lab.plot.curves("float32")            # the panel's own plot: the same curves as the file
    native = [c for c in curves if c.variant_name.endswith("(native)")]
    others = [c.opts["pen"] for c in curves if c not in native]
    assert len(native) == 1 and native[0].variant_name.startswith("gqa-16")
    pen = native[0].opts["pen"]
    colour = pen.color().name()                    # the native curve stands out: a colour and width of its own
    assert all(p.color().name() != colour and p.widthF() < pen.widthF() for p in others)
    left, right = (sum(image.pixelColor(x, y).name() == colour for x in range(a, b) for y in range(480))
                   for a, b in ((0, 170), (340, 500)))
    assert left > 20 and right > 20                                # in the float32 and the 8-bit plot
    svg = kv_lab.save_plot(tmp_path / "p.svg").read_text()
    assert svg.startswith("<?xml") or "<svg" in svg[:400]
    with pytest.raises(ExplorerError, match="must end in"):
        kv_lab.save_plot(tmp_path / "p.gif")
    assert len(kv_lab.export_actions()) == 3


def test_the_bundled_configs_open_from_the_combo_without_a_model(kv_lab, bare_session):
    names = [kv_lab.bundled_box.itemText(i) for i in range(kv_lab.bundled_box.count())]
    assert {"llama3-70b", "gemma3-27b", "deepseek-v2"} <= set(names)
    kv_lab.bundled_box.activated.emit(names.index("llama3-70b"))
    assert kv_lab.source_label.text() == "llama3-70b (config only)"
    assert [n for n in table_column(kv_lab, 0) if "native" in n] == ["gqa-8 ★ native"]
    assert kv_lab.bundled_box.currentIndex() == 0 and bare_session.model is None
    bare_session.set_trace(build_trace())
    assert not kv_lab.run_button.isEnabled()                   # nothing to convert from a config alone


def test_without_a_model_conversions_are_disabled(kv_lab, bare_session):
    bare_session.set_trace(build_trace())
    assert not kv_lab.run_button.isEnabled()
    assert not kv_lab.run_conversion("mqa", 2)


def test_a_real_conversion_runs_and_fills_steps_and_both_attention_maps(kv_lab, bare_session, lab_llama, qtbot,
                                                                         tmp_path):
    kv_lab.set_executor(model_backend(lab_llama))
    bare_session.select(layer=1, head=3)
    with qtbot.waitSignal(kv_lab.runner.finished, timeout=60000):
        assert kv_lab.run_conversion("mqa", 4)
    result = kv_lab.result
    assert kv_lab.steps_table.rowCount() == 4 and kv_lab.progress.value() == 100
    assert [kv_lab.steps_table.item(r, 3).text() in "✓✗" for r in range(4)] == [True] * 4
    assert "mqa: mean KL" in kv_lab.run_summary.text()
    assert kv_lab.original_map.shape == kv_lab.converted_map.shape == (13, 13)
    original = kv_lab.original_map.image.image
    assert np.allclose(original, result.original.attention(1)[3])
    assert not np.allclose(kv_lab.converted_map.image.image, original)
    lines = kv_lab.save_steps_csv(tmp_path / "s.csv").read_text().splitlines()
    assert len(lines) == 5 and lines[0].startswith("step,position")
    assert kv_lab.run_button.isEnabled() and not kv_lab.cancel_button.isEnabled()


def slow_job(started: threading.Event, seen: dict):
    def make(variant, steps, prompt_ids, followed=()):
        def job(loaded, progress, cancel):
            from explorer.core.convert import ConversionCancelled

            seen.update(loaded=loaded, thread=threading.current_thread().name)
            started.set()
            progress(0.25, "waiting")
            while not cancel.is_set():
                time.sleep(0.01)
            raise ConversionCancelled("The conversion was cancelled.")
        return job
    return make


def test_a_running_conversion_can_be_cancelled(kv_lab, bare_session, qtbot):
    bare_session.set_trace(build_trace())
    started, seen = threading.Event(), {}
    kv_lab.what_if_job = slow_job(started, seen)
    kv_lab.set_executor(model_backend("a model"))
    with qtbot.waitSignal(kv_lab.runner.failed, timeout=30000) as signal:
        assert kv_lab.run_conversion("mqa", 2)
        assert started.wait(10)
        assert kv_lab.cancel_button.isEnabled() and not kv_lab.run_button.isEnabled()
        kv_lab.cancel_button.click()
    assert signal.args == ["The conversion was cancelled."]
    assert kv_lab.run_summary.text() == "No result for mqa: The conversion was cancelled."
    qtbot.waitUntil(lambda: kv_lab.run_button.isEnabled())


@pytest.fixture
def wired(qtbot, bare_session):
    """The session wired to a worker holding a fake model, as the controller wires it in the app."""
    from explorer.app.thread.worker import ModelWorker
    from tests.app.fake_core import FakeCore

    worker = ModelWorker(FakeCore().api())
    bare_session.requests.model_job_requested.connect(worker.run_job)
    worker.busy_changed.connect(bare_session.set_busy)
    with qtbot.waitSignal(worker.model_loaded, timeout=10000) as loaded:
        worker.load("models/fake")
    qtbot.waitUntil(lambda: not worker.busy, timeout=10000)
    bare_session.set_model(loaded.args[0].info)
    bare_session.set_trace(build_trace())
    yield worker
    assert worker.shutdown(5.0)


def test_the_conversion_runs_on_the_worker_with_the_model_it_holds(kv_lab, bare_session, wired, qtbot):
    def job_factory(variant, steps, prompt_ids, followed=()):
        def job(loaded, progress, cancel):
            progress(0.5, "half")
            return (variant, steps, loaded.name, threading.current_thread().name)
        return job

    kv_lab.what_if_job = job_factory
    kv_lab.runner.finished.disconnect(kv_lab._on_result_changed)    # the fake job returns no WhatIf
    assert kv_lab.run_button.isEnabled()
    with qtbot.waitSignal(kv_lab.runner.finished, timeout=10000) as signal:
        assert kv_lab.run_conversion("mqa", 3)
    assert signal.args[0] == ("mqa", 3, "fake", "model-worker")


def test_stopping_the_worker_cancels_the_conversion(kv_lab, bare_session, wired, qtbot):
    started, seen = threading.Event(), {}
    kv_lab.what_if_job = slow_job(started, seen)
    with qtbot.waitSignal(kv_lab.runner.failed, timeout=10000) as signal:
        assert kv_lab.run_conversion("mqa", 2)
        assert started.wait(10)
        wired.cancel()                                       # the toolbar's Stop
    assert signal.args == ["The conversion was cancelled."] and seen["thread"] == "model-worker"
    qtbot.waitUntil(lambda: kv_lab.run_button.isEnabled())


def test_a_job_the_worker_drops_unblocks_the_panel(kv_lab, bare_session, wired, qtbot):
    gate = threading.Event()
    wired.run_job(lambda loaded, cancelled: gate.wait(10))   # hold the worker busy
    kv_lab.what_if_job = slow_job(threading.Event(), {})
    assert kv_lab.run_conversion("mqa", 2)
    with qtbot.waitSignal(kv_lab.runner.failed, timeout=10000):
        wired.cancel()                                       # drops the queued conversion before it runs
        gate.set()
    assert not kv_lab.runner.running and kv_lab.run_button.isEnabled()
