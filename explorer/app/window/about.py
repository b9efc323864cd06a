"""Help ▸ About: the versions of the app and its stack, and the licence of every model it can open, each model
named as the person's store holds it."""
from __future__ import annotations

import importlib.metadata
import platform
from html import escape
from pathlib import Path

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import qVersion

from explorer import __version__
from explorer.core import store

STACK = ("torch", "numpy", "tokenizers", "safetensors", "gguf", "pyqtgraph")


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def as_stored(reference: str) -> str:
    """A model's path as the person's store holds it: one that lies under a symbolic link of the store (the
    recent list keeps paths resolved) is named by the link, then "→" and where the link leads; a catalog
    name, or a path under no link of the store, as it is."""
    if "/" not in reference and "\\" not in reference:
        return reference
    path = Path(reference)
    try:
        for link in sorted(store.home().iterdir()):
            target = link.resolve() if link.is_symlink() else None
            if target is not None and (path == target or target in path.parents):
                return f"{link / path.relative_to(target)} → {path}"
    except (OSError, RuntimeError):           # no store, or one that cannot be read; a link that loops
        pass
    return reference


def about_html(window) -> str:
    """Versions of the app and its stack, and the licence of every model it can open."""
    stack = [("Transformer Explorer", __version__), ("Python", platform.python_version()),
             ("Qt", qVersion()), ("PySide6", pyside_version)]
    stack += [(name, _version(name)) for name in STACK]
    versions = "".join(f"<tr><td>{escape(n)}</td><td>{escape(v)}</td></tr>" for n, v in stack)
    models = []
    summary = window.controller.summary
    if summary is not None:
        models.append((summary.name + " (open)", summary.license))
    catalog = window.catalog_loader
    models += [(as_stored(c.reference), c.license) for c in catalog.latest]  # listed in the background
    # Before the first listing (CatalogSchedule: once the model thread is ready, after a load under way): not "none yet"
    unlisted = ("<tr><td>none yet</td></tr>" if catalog.listed
                else "<tr><td>the models are being listed; open About again in a moment</td></tr>")
    seen, licence_rows = set(), []
    for name, licence in models:
        if name not in seen:
            seen.add(name)
            licence_rows.append(f"<tr><td>{escape(name)}</td><td>{escape(licence or 'see its model card')}</td></tr>")
    return (f"<h3>Transformer Explorer {escape(__version__)}</h3>"
            "<p>Opens up a language model and shows the exact algebra of every decoding step.<br>"
            "Licensed under the Apache License 2.0.</p>"
            f"<h4>Versions</h4><table>{versions}</table>"
            f"<h4>Models</h4><table>{''.join(licence_rows) or unlisted}</table>"
            f"<p>Autosaved session: {escape(str(window.autosaver.path))}</p>")
