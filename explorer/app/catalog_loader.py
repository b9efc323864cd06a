"""The model catalog, listed on a background thread.

Summarizing the catalog reads every model's headers (a GGUF vocabulary of
50,000-250,000 strings takes seconds on a busy laptop), and the first listing
imports the loaders and with them torch. Doing that on the GUI thread froze the
window for seconds at start and after every load, and delayed the first model;
here it runs beside the GUI and hands the choices back through a queued signal.
"""
from __future__ import annotations

import threading
from typing import Callable

from PySide6.QtCore import QObject, Signal

from explorer.core.errors import ExplorerError


class CatalogLoader(QObject):
    """`refresh()` lists the catalog in the background; `ready(choices, error)` arrives on the GUI thread."""

    ready = Signal(object, object)          # list[ModelChoice], one sentence or None

    def __init__(self, catalog: Callable[[], list], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._catalog = catalog
        self._lock = threading.Lock()
        self._running = False
        self._again = False
        self.latest: list = []              # the last listing, for readers that must not wait (Help ▸ About)
        self.ready.connect(self._remember)

    def refresh(self) -> None:
        """List again; a refresh asked while one runs is done once that one ends."""
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running = True
        threading.Thread(target=self._run, name="model-catalog", daemon=True).start()

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._running

    def _run(self) -> None:
        while True:
            try:
                choices, error = list(self._catalog()), None
            except (ExplorerError, OSError) as failure:
                choices, error = [], str(failure)
            self.ready.emit(choices, error)
            with self._lock:
                if not self._again:
                    self._running = False
                    return
                self._again = False

    def _remember(self, choices, _error) -> None:
        self.latest = choices
