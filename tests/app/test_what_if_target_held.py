"""KV lab ▸ What-if: while a conversion runs, its target and step count are held (greyed), and given back when
it ends. The target box stayed live: another target chosen during the mla-128 conversion stood over
"Converting to mla-128…", as if that one were running (drive 19, M7)."""
from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.shared_window import settle
from tests.app.test_what_if_app import BUNDLED_GQA


def test_the_target_is_held_while_its_conversion_runs(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    try:
        window.show()
        window.prompt.set_text("To be, or not to be")
        window.open_model(str(BUNDLED_GQA))
        settle(qapp, lambda: window.session.trace is not None and not window.worker.busy, timeout_s=300)
        window.docks["kv_lab"].raise_()
        panel = window.docks["kv_lab"].widget()
        assert panel.variant_box.isEnabled() and panel.steps_box.isEnabled()
        assert panel.run_conversion("mqa", 2)
        assert panel.runner.running
        assert not panel.variant_box.isEnabled(), "another target can be chosen while mqa converts"
        assert not panel.steps_box.isEnabled()
        settle(qapp, lambda: not panel.runner.running and not window.worker.busy, timeout_s=300)
        assert panel.variant_box.isEnabled() and panel.steps_box.isEnabled()
    finally:
        window.close()
