"""KV lab ▸ What-if never shows one target's result as another's: once a conversion to a new target starts,
the table, the summary and both maps of the target before are gone and the summary names the new target;
a cancelled one says which target has no result and why; a finished one shows its own. And the Cache per
variant tab fits the width a 1366x768 screen's default layout gives it, with Help ▸ Learn open beside it
too: no sideways scroll bar, every plot legible and within sight, the rows' hint whole.

The expectations are the targets' names and the step counts the test asks for, and the widgets' rectangles
against the tab's viewport.
"""
from __future__ import annotations

import threading

from explorer.app.panels.kv_lab import model_backend
from explorer.app.window.learn_placement import open_learn
from tests.app.projector import toggle_presentation
from tests.app.screen_fit import MIN_PLOT_PX, settle
from tests.app.test_kv_lab import slow_job


def shown_steps(lab) -> list[str]:
    return [lab.steps_table.item(row, 0).text() for row in range(lab.steps_table.rowCount())]


def test_a_new_target_replaces_the_old_result_with_its_working_state(kv_lab, bare_session, lab_llama, qtbot):
    kv_lab.set_executor(model_backend(lab_llama))
    kv_lab.tabs.setCurrentWidget(kv_lab.what_if)
    with qtbot.waitSignal(kv_lab.runner.finished, timeout=60000):
        assert kv_lab.run_conversion("mqa", 3)
    assert len(shown_steps(kv_lab)) == 3 and kv_lab.run_summary.text().startswith("mqa:")
    assert not kv_lab.what_if.maps.isHidden() and kv_lab.converted_map.plot.titleLabel.text.startswith("mqa")

    started = threading.Event()
    make_slow = slow_job(started, {})
    real_job = kv_lab.what_if_job
    kv_lab.what_if_job = make_slow
    assert kv_lab.run_conversion("mha", 2)
    assert started.wait(10)
    # converting to mha: nothing of mqa's result stays up as current, and the working state names mha
    summary = kv_lab.run_summary.text()
    assert "mha" in summary and "mqa" not in summary, summary
    assert shown_steps(kv_lab) == [] and kv_lab.result is None
    assert kv_lab.what_if.maps.isHidden()
    assert "mqa" not in kv_lab.progress.text()

    with qtbot.waitSignal(kv_lab.runner.failed, timeout=30000):
        kv_lab.cancel_button.click()
    summary = kv_lab.run_summary.text()
    assert "mha" in summary and "cancelled" in summary and "mqa" not in summary, summary
    assert shown_steps(kv_lab) == [] and kv_lab.what_if.maps.isHidden()
    qtbot.waitUntil(kv_lab.run_button.isEnabled)

    kv_lab.what_if_job = real_job
    with qtbot.waitSignal(kv_lab.runner.finished, timeout=60000):
        assert kv_lab.run_conversion("mha", 2)
    assert len(shown_steps(kv_lab)) == 2 and kv_lab.run_summary.text().startswith("mha:")
    assert not kv_lab.what_if.maps.isHidden() and kv_lab.converted_map.plot.titleLabel.text.startswith("mha")

    bare_session.set_model(lab_llama.info)                    # a model switch: no result of the model before stays up
    assert shown_steps(kv_lab) == [] and kv_lab.result is None and kv_lab.what_if.maps.isHidden()


def assert_fits(lab, case: str) -> None:
    tab = lab.variants_tab
    assert not tab.horizontalScrollBar().isVisible(), (case, tab.viewport().width(), tab.widget().minimumSizeHint())
    viewport = tab.viewport().rect()
    for dtype, plot in tab.plot.plots.items():
        box = plot.vb.mapRectToScene(plot.vb.boundingRect())
        right = tab.plot.mapTo(tab.viewport(), tab.plot.mapFromScene(box.topRight()))
        assert viewport.contains(right) and box.width() >= MIN_PLOT_PX, (case, dtype, box, right, viewport)
    hint = lab.rows_hint
    if hint.isVisible():
        words = hint.fontMetrics().horizontalAdvance(hint.text())
        assert hint.width() >= words, (case, hint.text(), hint.width(), words)
        assert viewport.contains(hint.mapTo(tab.viewport(), hint.rect().topRight())), (case, hint.geometry())


def test_the_cache_per_variant_tab_fits_1366_px(projector_window):
    window = projector_window
    dock = window.docks["kv_lab"]
    lab = dock.widget()
    for case in ("default layout", "Learn open", "Learn open, presentation"):
        if case == "Learn open":
            open_learn(window)
        elif case.endswith("presentation"):
            toggle_presentation(window)
        dock.show()
        dock.raise_()
        lab.tabs.setCurrentWidget(lab.variants_tab)
        settle(0.5)
        assert lab.variants_tab.isVisible(), case
        assert_fits(lab, case)
