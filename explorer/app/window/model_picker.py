"""The model toolbar: which model (catalog, recent, a folder or .gguf file), on which device, in which dtype."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QLabel,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QToolBar,
    QWidget,
)

from explorer.app.window.model_refs import ModelChoice, short_name
from explorer.core import store

_OPEN_FOLDER = "open-folder"
_OPEN_FILE = "open-file"
DTYPES_BY_DEFAULT = {"cpu": ["float32"]}


def labelled_with_variant(choice: ModelChoice) -> str:
    """A catalog model's label with the checkpoint and quantisation its name stands for
    ("smollm2-135m · Instruct, Q4_1  (pulled)"): the name alone does not say it."""
    entry = store.PULLABLE.get(choice.reference)
    if entry is None or not entry.variant:
        return choice.label
    name, gap, rest = choice.label.partition("  (")
    return f"{name} · {entry.variant}{gap}{rest}"


class ElidedCombo(QComboBox):
    """A combo box whose shown text is elided in the middle ("smollm2-135m · Inst…Q4_1  (pulled)") to its field:
    Qt cuts it at the edge, mid-word, and the box is not widened (the sampling controls beside it would go
    into the toolbar's overflow at 1366 px). The drop-down list shows every label whole."""

    def initStyleOption(self, option: QStyleOptionComboBox) -> None:
        super().initStyleOption(option)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        option.currentText = self.fontMetrics().elidedText(option.currentText, Qt.TextElideMode.ElideMiddle,
                                                           field.width())

    def paintEvent(self, _event) -> None:
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)


class ModelToolbar(QToolBar):
    """Emits `model_chosen(reference)`; device and dtype are read when a model is loaded."""

    model_chosen = Signal(str)
    pull_requested = Signal(str)           # a catalog name that is not pulled yet
    device_changed = Signal(str, str)      # device, dtype

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Model", parent)
        self.setObjectName("model_toolbar")
        self.models = ElidedCombo()
        self.models.setObjectName("model_picker")
        self.models.setMinimumContentsLength(22)
        self.models.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.models.setToolTip("The model to explore: bundled, pulled, recent, or any folder or .gguf file")
        self.device = QComboBox()
        self.device.setObjectName("device_picker")
        self.device.setToolTip("Where the model runs (only devices this machine has)")
        self.dtype = QComboBox()
        self.dtype.setObjectName("dtype_picker")
        self.dtype.setToolTip("The dtype the weights are computed in")
        self.addWidget(QLabel(" Model "))
        self.addWidget(self.models)
        self.addWidget(QLabel(" on "))
        self.addWidget(self.device)
        self.addWidget(self.dtype)
        self._devices: dict[str, list[str]] = dict(DTYPES_BY_DEFAULT)
        self._current: str | None = None
        self._choices: list[ModelChoice] = []
        self._recent: list[str] = []
        self.set_devices(self._devices)
        self.models.activated.connect(self._on_activated)
        self.device.currentTextChanged.connect(self._on_device_changed)
        self.dtype.currentTextChanged.connect(lambda _: self._emit_device())

    # ----- contents ------------------------------------------------------------------
    def set_models(self, choices: list[ModelChoice], recent: list[str], current: str | None) -> None:
        self._choices, self._recent, self._current = list(choices), list(recent), current
        self._rebuild()

    def set_current(self, reference: str | None) -> None:
        self._current = reference
        self._rebuild()

    def set_devices(self, devices: dict[str, list[str]], device: str | None = None, dtype: str | None = None) -> None:
        """Offer only `devices` ({device: [dtypes]}), keeping the choice when it is still offered."""
        self._devices = dict(devices) or dict(DTYPES_BY_DEFAULT)
        keep = device or self.device.currentText() or "cpu"
        self.device.blockSignals(True)
        self.device.clear()
        self.device.addItems(list(self._devices))
        self.device.setCurrentText(keep if keep in self._devices else next(iter(self._devices)))
        self.device.blockSignals(False)
        self._fill_dtypes(dtype)

    def choice(self) -> tuple[str, str]:
        return self.device.currentText() or "cpu", self.dtype.currentText() or "float32"

    def open_actions(self, parent: QWidget) -> list[QAction]:
        """'Open model folder…' and 'Open .gguf file…', for the File menu."""
        folder = QAction("Open Model &Folder…", parent)
        folder.setShortcut("Ctrl+O")
        folder.triggered.connect(lambda: self.ask_for_model(_OPEN_FOLDER))
        file = QAction("Open Model F&ile (.gguf, .safetensors)…", parent)
        file.triggered.connect(lambda: self.ask_for_model(_OPEN_FILE))
        return [folder, file]

    def ask_for_model(self, kind: str) -> None:
        if kind == _OPEN_FOLDER:
            path = QFileDialog.getExistingDirectory(self, "Open a model folder (config.json + weights)")
        else:
            path, _ = QFileDialog.getOpenFileName(self, "Open a model file", "",
                                                  "Models (*.gguf *.safetensors);;All files (*)")
        if path:
            self.model_chosen.emit(path)

    # ----- helpers ---------------------------------------------------------------------
    def _rebuild(self) -> None:
        combo = self.models
        combo.blockSignals(True)
        combo.clear()
        for choice in self._choices:
            combo.addItem(labelled_with_variant(choice), choice.reference)
            combo.setItemData(combo.count() - 1, choice.tip, Qt.ItemDataRole.ToolTipRole)
            if not choice.available and not choice.pullable:   # e.g. unsupported: listed, greyed, the reason in its tip
                combo.model().item(combo.count() - 1).setEnabled(False)
        current = self._listed_as(self._current)
        recent = list(dict.fromkeys(r for r in map(self._listed_as, self._recent) if r not in self._known()))
        if current and current not in self._known() and current not in recent:
            recent.insert(0, current)
        if recent:
            combo.insertSeparator(combo.count())
            for reference in recent:
                combo.addItem(short_name(reference), reference)
                combo.setItemData(combo.count() - 1, reference, Qt.ItemDataRole.ToolTipRole)
        combo.insertSeparator(combo.count())
        combo.addItem("Open folder…", _OPEN_FOLDER)
        combo.addItem("Open .gguf / .safetensors file…", _OPEN_FILE)
        combo.setCurrentIndex(combo.findData(current) if current else -1)
        combo.blockSignals(False)

    def _known(self) -> set[str]:
        return {choice.reference for choice in self._choices}

    def _listed_as(self, reference: str | None) -> str | None:
        """The catalog entry a reference opens (a pulled model opened by its path, or by its store folder, is that
        entry), else itself."""
        if not reference or ("/" not in reference and "\\" not in reference):
            return reference
        resolved = str(store.opens_from(reference))       # never raises: a path it cannot resolve is itself
        return next((c.reference for c in self._choices if c.path == resolved), reference)

    def _on_activated(self, index: int) -> None:
        reference = self.models.itemData(index)
        if reference in (_OPEN_FOLDER, _OPEN_FILE):
            self._rebuild()                 # show the current model again until a file is chosen
            self.ask_for_model(reference)
        elif self._is_pullable(reference):
            self._rebuild()                 # the current model stays shown while the pull runs
            self.pull_requested.emit(reference)
        elif reference and reference != self._listed_as(self._current):
            self.model_chosen.emit(reference)

    def _is_pullable(self, reference) -> bool:
        return any(c.reference == reference and c.pullable for c in self._choices)

    def _fill_dtypes(self, dtype: str | None = None) -> None:
        keep = dtype or self.dtype.currentText() or "float32"
        dtypes = self._devices.get(self.device.currentText(), ["float32"])
        self.dtype.blockSignals(True)
        self.dtype.clear()
        self.dtype.addItems(dtypes)
        self.dtype.setCurrentText(keep if keep in dtypes else dtypes[0])
        self.dtype.blockSignals(False)

    def _on_device_changed(self, _device: str) -> None:
        self._fill_dtypes()
        self._emit_device()

    def _emit_device(self) -> None:
        self.device_changed.emit(*self.choice())
