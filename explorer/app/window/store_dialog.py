"""File ▸ Model Store…: what the model store holds and how much space each part takes, and the two ways to
free it that `python -m explorer models --clear-copies / --remove NAME` give on the command line: the float32
copies first loads made (made again by the next load) and a pulled model's folder (pulled again on demand).
Both ask first; a failure is one sentence in the window's error line (show_error).
"""
from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from explorer.app.widgets.dialog_focus import take_focus_if_none
from explorer.core import store
from explorer.core.errors import ExplorerError
from explorer.core.units import human_bytes

COLUMNS = ("Model", "Model files", "Copies made by its first load", "Folder")


class StoreDialog(QDialog):
    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.setWindowTitle("Model store")
        self.where = QLabel()
        self.where.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.total = QLabel()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.clear_button = QPushButton("Clear Copies…")
        self.clear_button.setToolTip("Delete the float32 copies first loads made: the next load makes them again.")
        self.remove_button = QPushButton("Remove Model…")
        self.remove_button.setToolTip("Delete the selected model's folder: it is pulled again when next opened.")
        for button in (self.clear_button, self.remove_button):
            buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.clear_button.clicked.connect(self.clear_copies)
        self.remove_button.clicked.connect(self.remove_selected)
        self.table.itemSelectionChanged.connect(self._enable)
        layout = QVBoxLayout(self)
        for widget in (self.where, self.table, self.total, buttons):
            layout.addWidget(widget)
        self.resize(760, 320)
        self.models: list[store.StoredModel] = []
        self.refresh()

    def refresh(self) -> None:
        """Read the store again and show it."""
        try:
            self.models = store.stored_models()
        except ExplorerError as error:
            self.models = []
            self.window.show_error(str(error))
        self.where.setText(f"The model store is {store.home()}.")
        self.table.setRowCount(len(self.models))
        for row, model in enumerate(self.models):
            copies = human_bytes(model.copy_bytes) if model.copies else "none"
            for col, text in enumerate((model.name, human_bytes(model.model_bytes), copies, str(model.folder))):
                self.table.setItem(row, col, QTableWidgetItem(text))
        held = sum(m.model_bytes + m.copy_bytes for m in self.models)
        copies = sum(m.copy_bytes for m in self.models)
        self.total.setText(f"{len(self.models)} pulled models take {human_bytes(held)}"
                           + (f", {human_bytes(copies)} of them copies." if copies else "."))
        self._enable()

    def _enable(self) -> None:
        self.clear_button.setEnabled(any(m.copies for m in self.models))
        self.remove_button.setEnabled(self.selected() is not None)

    def selected(self) -> store.StoredModel | None:
        rows = {index.row() for index in self.table.selectionModel().selectedRows()}
        return self.models[min(rows)] if rows and min(rows) < len(self.models) else None

    def _confirmed(self, title: str, question: str) -> bool:
        answer = QMessageBox.question(self, title, question)
        take_focus_if_none(self)
        return answer == QMessageBox.StandardButton.Yes

    def clear_copies(self) -> None:
        copies = sum(m.copy_bytes for m in self.models)
        if not self._confirmed("Clear copies", f"Delete {human_bytes(copies)} of float32 copies? The next load "
                                               "of each model makes its copy again."):
            return
        try:
            store.clear_copies()
        except ExplorerError as error:
            self.window.show_error(str(error))
        self.refresh()

    def remove_selected(self) -> None:
        model = self.selected()
        if model is None:
            return
        size = human_bytes(model.model_bytes + model.copy_bytes)
        if not self._confirmed("Remove model", f"Delete {model.name} ({size}) from {model.folder}? It is pulled "
                                               "again when next opened."):
            return
        try:
            store.remove_model(model.name)
        except ExplorerError as error:
            self.window.show_error(str(error))
        self.refresh()


def show_store(window) -> None:
    """File ▸ Model Store…: the dialog, modal; the window takes the focus back once it closes."""
    StoreDialog(window).exec()
    take_focus_if_none(window)
