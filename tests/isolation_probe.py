"""Run only by tests/test_isolation.py, in a child pytest: writes through every default path the app has."""
import os
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from explorer.app.figures.figure_settings import APPLICATION, ORGANIZATION
from explorer.app.state import session_file
from explorer.app.window.settings import AppSettings
from explorer.core import store


def test_the_app_writes_its_defaults():
    QApplication.instance() or QApplication([])
    store.remember_recent(Path(__file__))
    settings = AppSettings()
    settings.q.setValue("probe/written", "yes")
    settings.q.sync()
    QSettings(ORGANIZATION, APPLICATION).setValue("export/last_folder", "/probe")
    session_file.default_autosave_path().parent.mkdir(parents=True, exist_ok=True)
    session_file.default_autosave_path().write_text("{}")
    user = Path(os.environ["PROBE_USER_HOME"])
    for written in (store.home(), session_file.app_home(), Path(settings.q.fileName()), Path.home()):
        assert user not in written.parents and written != user
