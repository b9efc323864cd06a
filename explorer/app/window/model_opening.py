"""When a model may be opened, and when it must be opened again: the terms gate and the device change.

Models under terms of use (Gemma) open only once the person has accepted their terms, asked once
and remembered in the settings. A device or dtype chosen in the toolbar reloads the open model when
it differs from the one it was loaded on.
"""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

from explorer.app.window import model_refs
from explorer.app.window.settings import AppSettings


def terms_accepted(parent: QWidget, settings: AppSettings, reference: str) -> bool:
    """True for a model without terms or with terms accepted before; else asks, and remembers a yes."""
    terms = model_refs.terms_of(reference)
    if terms is None or settings.accepted_terms(terms[0]):
        return True
    answer = QMessageBox.question(parent, "Terms of use", f"{terms[1]}\n\nDo you accept these terms?")
    if answer != QMessageBox.StandardButton.Yes:
        return False
    settings.accept_terms(terms[0])
    return True


def to_reopen(controller, device: str, dtype: str) -> str | None:
    """The open model's reference when (device, dtype) differs from what it was loaded on, else None."""
    summary, reference = controller.summary, controller.reference
    if reference and summary is not None and (device, dtype) != (summary.device, summary.dtype):
        return reference
    return None
