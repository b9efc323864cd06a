"""The model catalog, listed on a background thread.

Summarizing the catalog reads every model's headers (a GGUF vocabulary of
50,000-250,000 strings takes seconds on a busy laptop), and the first listing
imports the loaders and with them torch. Doing that on the GUI thread froze the
window for seconds at start and after every load, and delayed the first model;
here it runs beside the GUI and hands the choices back through a queued signal.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QFileSystemWatcher, QObject, Signal

from explorer.app.thread import threads
from explorer.core import store
from explorer.core.errors import ExplorerError


class CatalogLoader(QObject):
    """`refresh()` lists the catalog in the background; `ready(choices, error)` arrives on the GUI thread."""

    ready = Signal(object, object)          # list[ModelChoice], one sentence or None

    def __init__(self, catalog: Callable[[], list], parent: QObject | None = None,
                 store_folder: Path | None = None) -> None:
        super().__init__(parent)
        self._catalog = catalog
        self._lock = threading.Lock()
        self._running = False
        self._again = False
        self.latest: list = []              # the last listing, for readers that must not wait (Help ▸ About)
        self.listed = False                 # a listing has come back (latest is the catalog, not "not read yet")
        self.ready.connect(self._remember)
        self._watcher = QFileSystemWatcher(self)
        self._watcher.directoryChanged.connect(self._on_store_changed)
        self._listed_once = False
        self._store = Path(store.home() if store_folder is None else store_folder)
        self._models = self._models_in_store()
        self.watch(store.home() if store_folder is None else store_folder)

    def watch(self, folder: Path) -> None:
        """List again whenever `folder` (the model store) changes: a model pulled from a terminal, or removed,
        shows in the picker as it is. Until the folder exists its parent is watched."""
        self._store = Path(folder)
        existing = next((p for p in (self._store, *self._store.parents) if p.is_dir()), None)
        watched = self._watcher.directories()
        if existing is None or watched == [str(existing)]:
            return
        if watched:
            self._watcher.removePaths(watched)
        self._watcher.addPath(str(existing))

    def _models_in_store(self) -> frozenset:
        """(folder, has pulled.json) for each model folder: what the listing depends on (not recent.json,
        written after every load, nor a pull's hidden work folder)."""
        try:
            return frozenset((p.name, (p / "pulled.json").is_file()) for p in self._store.iterdir()
                             if p.is_dir() and not p.name.startswith("."))
        except OSError:
            return frozenset()

    def _on_store_changed(self, _path: str) -> None:
        self.watch(self._store)
        models = self._models_in_store()
        changed, self._models = models != self._models, models
        if changed and self._listed_once:   # the first listing waits for the first model (see MainWindow)
            self.refresh()

    def refresh(self) -> None:
        """List again; a refresh asked while one runs is done once that one ends."""
        self._listed_once = True
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running = True
        threads.start(self._run, "model-catalog")

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
        self.latest, self.listed = choices, True
