"""The KV lab panel: the variant table and plot from a config or a loaded model, exports, and the what-if runner."""
from __future__ import annotations

import csv
import io
import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

from explorer.app.panels.kv_lab import KVLabPanel, model_backend
from explorer.app.session import Session
from explorer.core import kv_variants as kv
from explorer.core.errors import ExplorerError
from tests.app.synthetic_trace import build_trace

CONFIGS = Path(__file__).resolve().parents[2] / "resources" / "configs"


@pytest.fixture
def session(qtbot):
    return Session()


@pytest.fixture
def panel(qtbot, session):
    panel = KVLabPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1000, 800)
    panel.show()
    return panel


def table_column(panel, column: int) -> list[str]:
    return [panel.table.item(row, column).text() for row in range(panel.table.rowCount())]


def test_a_config_only_model_fills_the_table_and_marks_its_native_variant(panel):
    assert panel.open_config(str(CONFIGS / "deepseek-v2"))
    names = table_column(panel, 0)
    assert len(names) == 9 and names[-1] == "mla-512 ★ native"
    assert sum("native" in name for name in names) == 1
    assert panel.table.item(8, 2).text() == "576"
    assert panel.tokens_box.value() == 163840
    curves = panel.plot.getPlotItem().listDataItems()
    assert len(curves) == 9
    native = next(c for c in curves if c.name() == "mla-512 (native)")
    assert native.opts["pen"].width() == 4
    x, y = native.getData()
    assert y[-1] == pytest.approx(576 * 60 * 4 * 163840 / 1024 ** 2)


def test_dtype_scales_the_totals_and_ranks_add_mla_rows(panel):
    panel.open_config(str(CONFIGS / "llama3-70b"))
    panel.tokens_box.setValue(1000)
    float32 = {r.variant.name: r.bytes_total for r in panel.rows()}
    panel.dtype_box.setCurrentText("int8")
    int8 = {r.variant.name: r.bytes_total for r in panel.rows()}
    assert float32["gqa-8"] == 4 * int8["gqa-8"] == 4 * 2048 * 80 * 1000
    panel.ranks_edit.setText("100, 200")
    panel.ranks_edit.editingFinished.emit()
    assert [n for n in table_column(panel, 0) if n.startswith("mla")] == ["mla-100", "mla-200"]


def test_the_loaded_model_is_used_until_a_config_is_opened(panel, session):
    session.set_model(build_trace(n_layers=3, n_heads=4, n_kv_heads=2).model)
    assert panel.source_label.text() == session.model.name
    assert [n for n in table_column(panel, 0) if "native" in n] == ["gqa-2 ★ native"]
    assert panel.variant_box.findText("gqa-2") == -1 and panel.variant_box.findText("mqa") >= 0


def test_a_bad_config_is_one_sentence_and_keeps_the_table(panel, session, tmp_path, qtbot):
    panel.open_config(str(CONFIGS / "gemma3-27b"))
    before = table_column(panel, 0)
    with qtbot.waitSignal(session.error_raised) as signal:
        assert not panel.open_config(str(tmp_path / "missing"))
    assert "does not exist" in signal.args[0]
    assert table_column(panel, 0) == before


def test_exports_table_csv_and_plot_png_svg(panel, tmp_path):
    panel.open_config(str(CONFIGS / "gemma3-27b"))
    panel.tokens_box.setValue(4096)
    table = list(csv.DictReader(io.StringIO(panel.save_table_csv(tmp_path / "t.csv").read_text())))
    assert table == list(csv.DictReader(io.StringIO(kv.to_csv(panel.rows()))))
    assert [r["variant"] for r in table if r["native"] == "True"] == ["gqa-16"]
    image = QImage(str(panel.save_plot(tmp_path / "p.png", 640, 480)))
    assert (image.width(), image.height()) == (640, 480)
    colours = {image.pixelColor(x, y).name() for x in range(0, 640, 8) for y in range(0, 480, 8)}
    assert "#ff2d55" in colours                                    # the native curve is drawn
    svg = panel.save_plot(tmp_path / "p.svg").read_text()
    assert svg.startswith("<?xml") or "<svg" in svg[:400]
    with pytest.raises(ExplorerError, match="must end in"):
        panel.save_plot(tmp_path / "p.gif")
    assert len(panel.export_actions()) == 3


def test_without_a_backend_conversions_are_disabled(panel, session):
    session.set_trace(build_trace())
    assert not panel.run_button.isEnabled()
    assert not panel.run_conversion("mqa", 2)


@pytest.fixture
def tiny(session):
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama", seed=4)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")
    trace = Decoder(loaded).prefill(np.arange(10) % 90)
    session.set_model(loaded.info)
    session.set_trace(trace)
    return loaded


def test_a_real_conversion_runs_and_fills_steps_and_both_attention_maps(panel, session, tiny, qtbot, tmp_path):
    panel.set_backend(model_backend(tiny))
    session.select(layer=1, head=3)
    with qtbot.waitSignal(panel.runner.finished, timeout=60000):
        assert panel.run_conversion("mqa", 4)
    result = panel.result
    assert panel.steps_table.rowCount() == 4 and panel.progress.value() == 100
    assert [panel.steps_table.item(r, 3).text() in "✓✗" for r in range(4)] == [True] * 4
    assert "mqa: mean KL" in panel.run_summary.text()
    assert panel.original_map.shape == panel.converted_map.shape == (13, 13)
    original = panel.original_map.image.image
    assert np.allclose(original, result.original.attention(1)[3])
    assert not np.allclose(panel.converted_map.image.image, original)
    lines = panel.save_steps_csv(tmp_path / "s.csv").read_text().splitlines()
    assert len(lines) == 5 and lines[0].startswith("step,position")
    assert panel.run_button.isEnabled() and not panel.cancel_button.isEnabled()


def test_a_running_conversion_can_be_cancelled(panel, session, qtbot):
    session.set_trace(build_trace())
    started = threading.Event()

    def slow_backend(variant, steps, prompt_ids, progress, cancel):
        from explorer.core.convert import ConversionCancelled

        started.set()
        cancel.wait(30)
        raise ConversionCancelled("The conversion was cancelled.")

    panel.set_backend(slow_backend)
    with qtbot.waitSignal(panel.runner.failed, timeout=30000) as signal:
        assert panel.run_conversion("mqa", 2)
        assert started.wait(10)
        assert panel.cancel_button.isEnabled() and not panel.run_button.isEnabled()
        panel.cancel_button.click()
    assert signal.args == ["The conversion was cancelled."]
    assert panel.run_summary.text() == "The conversion was cancelled."
    qtbot.waitUntil(lambda: panel.run_button.isEnabled())
