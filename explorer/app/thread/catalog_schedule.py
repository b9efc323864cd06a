"""When the catalog is listed, so that listing never races a load or the first prefill.

Listing reads every model's header again and, the first time, imports torch's loaders; beside a load
or a prefill it slowed the first trace by a second on a 2-core machine, and two threads importing
torch at once break its import. So: the first listing waits until the worker has imported torch
(it reports the devices then) and no model is loading; after a load, the listing waits until the
worker is idle (the prefill of the prompt has run).
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, QTimer

from explorer.app.thread.catalog_loader import CatalogLoader


class CatalogSchedule(QObject):
    """`now()` lists at once; `after_load()` once the worker is idle; `first()` unless listed or loading."""

    def __init__(self, loader: CatalogLoader, worker, loading: Callable[[], object],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.loader, self._worker, self._loading = loader, worker, loading
        self.listed = False
        self.pending = False             # set before the worker's busy_changed is connected: it reads it at once
        worker.busy_changed.connect(self._if_idle)

    def now(self) -> None:
        self.listed = True
        self.loader.refresh()

    def after_load(self) -> None:
        self.pending = True
        QTimer.singleShot(0, self._if_idle)

    def first(self) -> None:
        if not self.listed and self._loading() is None:
            self.now()

    def _if_idle(self, *_args) -> None:
        if self.pending and not self._worker.busy:
            self.pending = False
            self.now()
