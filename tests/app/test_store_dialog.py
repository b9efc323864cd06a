"""File ▸ Model Store… (issue 22: "let the user see and clear what the store holds"): the dialog lists each
pulled model's files and the copies its first load made with their sizes on disk, Clear Copies deletes the
copies alone and Remove Model the selected folder, each after a Yes, and nothing at a No."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from explorer.app.window.store_dialog import StoreDialog
from explorer.core import store
from explorer.core.units import human_bytes
from tests.app.shared_window import make_window


@pytest.fixture
def stored(store_home):
    """A pulled SmolLM2 in the test's store, files of a few KB, and a float32 copy beside it."""
    entry = store.PULLABLE["smollm2-135m"]
    folder = store_home / entry.name
    folder.mkdir(parents=True)
    for index, file in enumerate(entry.files):
        (folder / file.name).write_bytes(b"m" * (3000 + index))
    gguf = next(file.name for file in entry.files if file.name.endswith(".gguf"))
    copy = folder / (gguf + store.COPY_SUFFIX)                  # named as a first load names it
    copy.write_bytes(b"c" * 50_000)
    return folder, copy


@pytest.fixture
def window(qtbot, tmp_path, store_home):
    window = make_window(qtbot, tmp_path)
    yield window
    window.close()


def shown(dialog: StoreDialog) -> list[list[str]]:
    return [[dialog.table.item(r, c).text() for c in range(dialog.table.columnCount())]
            for r in range(dialog.table.rowCount())]


def answer(monkeypatch, button):
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda parent, title, text, *a: (asked.append(text), button)[1])
    return asked


def test_the_store_is_listed_with_the_sizes_on_disk(qtbot, window, stored):
    folder, copy = stored
    dialog = StoreDialog(window)
    qtbot.addWidget(dialog)
    model_bytes = sum(p.stat().st_size for p in folder.iterdir() if p != copy)
    [row] = shown(dialog)
    assert row[0] == "smollm2-135m" and row[3] == str(folder)
    assert row[1] == human_bytes(model_bytes) and row[2] == human_bytes(copy.stat().st_size)   # sizes on disk
    assert dialog.clear_button.isEnabled() and not dialog.remove_button.isEnabled()   # nothing selected yet


def test_clear_copies_deletes_the_copies_alone_after_a_yes(qtbot, window, stored, monkeypatch):
    folder, copy = stored
    dialog = StoreDialog(window)
    qtbot.addWidget(dialog)
    asked = answer(monkeypatch, QMessageBox.StandardButton.No)
    dialog.clear_button.click()
    assert copy.exists() and asked
    answer(monkeypatch, QMessageBox.StandardButton.Yes)
    dialog.clear_button.click()
    assert not copy.exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted(f.name for f in store.PULLABLE["smollm2-135m"].files)
    assert shown(dialog)[0][2] == "none" and not dialog.clear_button.isEnabled()


def test_remove_model_deletes_the_selected_folder_after_a_yes(qtbot, window, stored, monkeypatch):
    folder, _copy = stored
    dialog = StoreDialog(window)
    qtbot.addWidget(dialog)
    dialog.table.selectRow(0)
    assert dialog.remove_button.isEnabled()
    answer(monkeypatch, QMessageBox.StandardButton.No)
    dialog.remove_button.click()
    assert folder.is_dir()
    asked = answer(monkeypatch, QMessageBox.StandardButton.Yes)
    dialog.remove_button.click()
    assert not folder.exists() and "smollm2-135m" in asked[0]
    assert shown(dialog) == [] and "0 pulled models" in dialog.total.text()


def test_the_file_menu_opens_it(qtbot, window, stored, monkeypatch):
    opened = []
    monkeypatch.setattr(StoreDialog, "exec", lambda self: opened.append(shown(self)) or 0)
    [action] = [a for a in window.menus.file.actions() if a.text().replace("&", "") == "Model Store…"]
    action.trigger()
    assert opened and opened[0][0][0] == "smollm2-135m"
