"""The choice between encoder self-, decoder self- and cross-attention, for the panels that draw attention.

Shown only while an encoder-decoder is loaded; it writes `Selection.attention`
through the panel, so every panel follows the same choice.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from explorer.views import trace_views


class AttentionKindBox(QWidget):
    def __init__(self, panel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.setObjectName("attention_kind")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("attention"))
        layout.addWidget(self.combo)
        self._kinds: tuple[str, ...] = ()
        self.combo.currentIndexChanged.connect(lambda i: i >= 0 and panel.select(attention=self._kinds[i]))
        self.setVisible(False)

    @property
    def kinds(self) -> tuple[str, ...]:
        return self._kinds

    def show_kind(self, info, kind: str) -> None:
        """Offer the kinds `info`'s model has and show `kind` (call inside the panel's `updating()`)."""
        kinds = trace_views.kinds_of(info)
        if kinds != self._kinds:
            self._kinds = kinds
            self.combo.blockSignals(True)
            self.combo.clear()
            for i, name in enumerate(kinds):
                self.combo.addItem(trace_views.LABELS[name])
                self.combo.setItemData(i, trace_views.TIPS[name], Qt.ItemDataRole.ToolTipRole)
            self.combo.blockSignals(False)
        self.setVisible(len(kinds) > 1)
        self.combo.setCurrentIndex(kinds.index(trace_views.kind_for(info, kind)))
