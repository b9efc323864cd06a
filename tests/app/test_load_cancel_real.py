"""Cancel on the "Loading" dialog while Gemma 3 270M loads, through the real window, its catalog, the terms
box and the model thread: the previous model stays in use, the picker names it again, the status bar says
the load was cancelled and no load lands later.

On a bare X screen the dialog closed and Gemma was loaded 15-30 s later anyway: the dialog hid itself once the
loader reported its last tensor (QProgressDialog's auto-reset at its maximum) while the model was still being
made, so the Cancel a person clicked then met no dialog, and nothing could stop the load any more."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMessageBox, QPushButton

from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from explorer.core import store
from explorer.core.loaders import READY_AT
from tests.app.window_helpers import idle

pytestmark = pytest.mark.realmodel

PREVIOUS, CHOSEN = "smollm2-135m", "gemma3-270m"


@pytest.fixture
def listed_window(qtbot, tmp_path, dialogs):
    """The window on the run's store (its catalog lists the pulled models), with SmolLM2 open and run."""
    for name in (PREVIOUS, CHOSEN):
        if store.pulled_path(name) is None:
            pytest.skip(f"{name} is not pulled (python -m explorer pull {name} --accept-license)")
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json")
    qtbot.addWidget(window)
    window.show()
    window.prompt.set_text("The capital of France is")
    window.open_model(PREVIOUS)
    idle(qtbot, window, lambda: window.session.trace is not None
         and window.model_bar.models.findData(CHOSEN) >= 0)
    yield window
    window.close()


def choose(window, reference: str) -> None:
    """What a click on the picker's item does: the combo shows it, then `activated`."""
    combo = window.model_bar.models
    index = combo.findData(reference)
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def test_cancel_once_every_tensor_is_read_stops_the_load(qtbot, listed_window, dialogs):
    window = listed_window
    previous = window.controller.summary
    landed, seen, shown_while_reading = [], [], []
    window.controller.model_ready.connect(lambda summary: landed.append(summary.reference))

    def click_cancel_at_the_last_tensor(fraction: float, _message: str) -> None:
        """Runs after the window's own handler of the same report, as a person's click would after the repaint.
        Every tensor is read once the load reports READY_AT: what is left is making the model."""
        dialog = window.progress
        if fraction < READY_AT:
            shown_while_reading.append(dialog is not None and dialog.isVisible())
            return
        if seen:
            return
        seen.append(dialog is not None and dialog.isVisible())
        if seen[0]:
            QTest.mouseClick(dialog.findChild(QPushButton), Qt.MouseButton.LeftButton)
            seen.append(window.status.currentMessage())

    window.worker.progress.connect(click_cancel_at_the_last_tensor)
    choose(window, CHOSEN)
    assert len(dialogs["questions"]) == 1 and "Gemma" in dialogs["questions"][0]     # its terms, accepted
    qtbot.waitUntil(lambda: bool(seen), timeout=300000)
    assert any(shown_while_reading)            # the dialog was up while the tensors were read
    assert seen[0], "the Loading dialog was gone while the model was still loading: its Cancel could not be clicked"
    assert "cancelled" in seen[1]

    idle(qtbot, window)                         # the model thread has ended the load request
    qtbot.wait(500)                             # and nothing it sent is still on its way
    assert landed == []
    assert window.controller.reference == PREVIOUS and window.controller.summary is previous
    assert window.session.model == previous.info
    assert window.worker._loop._state.load_request.path == PREVIOUS      # what the model thread runs
    assert window.model_bar.models.currentData() == PREVIOUS
    assert window.windowTitle().startswith(previous.name)
    assert window.progress is None


def test_terms_declined_in_the_picker_name_the_model_in_use_again(qtbot, listed_window, dialogs):
    window = listed_window
    dialogs["answer"] = QMessageBox.StandardButton.No
    choose(window, CHOSEN)
    assert len(dialogs["questions"]) == 1 and window.controller.loading is None
    assert window.model_bar.models.currentData() == PREVIOUS
