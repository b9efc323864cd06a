"""KV lab ▸ What-if conversion on a model loaded the way the app loads it (core.runtime.load_model, under
torch.inference_mode), through the model thread: the named job the panel starts, for every target it offers.

A conversion that built its copy outside inference mode once failed for every target with "Setting
requires_grad=True on inference tensor outside InferenceMode"; the panel's own tests used a model built
outside that mode and did not see it.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.shared_window import settle

BUNDLED_GQA = Path(__file__).resolve().parents[2] / "resources" / "models" / "shakespeare-gqa"
STEPS = 2


def smollm2() -> str:
    from explorer.core import store

    path = store.pulled_path("smollm2-135m")
    if path is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    return str(path)


MODELS = [pytest.param(lambda: str(BUNDLED_GQA), id="bundled-gqa"),
          pytest.param(smollm2, id="smollm2-135m", marks=pytest.mark.realmodel)]


@pytest.fixture(params=MODELS)
def window(request, qapp, tmp_path, monkeypatch):
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: warnings.append(text))
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    window.warnings = warnings
    window.show()
    window.prompt.set_text("To be, or not to be")
    window.open_model(request.param())
    settle(qapp, lambda: window.session.trace is not None and not window.worker.busy, timeout_s=300)
    yield window
    window.close()


def test_every_offered_target_converts_the_model_the_app_loaded(qapp, window):
    dock = window.docks["kv_lab"]
    dock.raise_()
    panel = dock.widget()
    assert panel.executor is None, "the panel runs its job on the app's model thread"
    offered = [panel.variant_box.itemText(i) for i in range(panel.variant_box.count())]
    assert {"mha", "mqa"} <= set(offered) and any(v.startswith("mla-") for v in offered), offered
    failures, results = {}, {}
    for variant in offered:
        finished, failed = [], []
        panel.runner.finished.connect(finished.append)
        panel.runner.failed.connect(failed.append)
        try:
            assert panel.run_conversion(variant, STEPS), variant
            settle(qapp, lambda: (finished or failed) and not panel.runner.running and not window.worker.busy,
                   timeout_s=300)
        finally:
            panel.runner.finished.disconnect(finished.append)
            panel.runner.failed.disconnect(failed.append)
        if failed:
            failures[variant] = failed[0][:300]
        else:
            results[variant] = finished[0]
    assert not failures, failures
    assert not window.warnings
    for variant, result in results.items():
        assert result.variant == variant and len(result.comparisons) == STEPS
        assert all(math.isfinite(row.kl) and row.kl >= 0 for row in result.comparisons), variant
    # GQA -> MHA copies each K/V head to the query heads that read it: the same model, KL 0 (float rounding).
    assert max(row.kl for row in results["mha"].comparisons) < 1e-6
    # MQA pools all K/V heads into one: a different model, and a cache N_KV times smaller.
    mqa = results["mqa"].comparisons[-1]
    assert mqa.converted_bytes * window.session.model.n_kv_heads == mqa.original_bytes
