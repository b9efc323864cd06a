"""What a file dropped on the window opens: a session file (.json) through File ▸ Open Session, anything the model
opener takes as a model (a folder, a GGUF, a store's entry) through the picker's path. Other drops are refused."""
from __future__ import annotations

from explorer.app.window import model_refs


def dropped_path(url) -> str | None:
    """The local path a dropped URL names where the window opens it, else None."""
    if not url.isLocalFile():
        return None
    path = url.toLocalFile()
    return path if model_refs.is_model_path(path) or path.endswith(".json") else None


def accept_drag(event) -> None:
    """Take a drag that carries something the window opens."""
    if any(dropped_path(url) for url in event.mimeData().urls()):
        event.acceptProposedAction()


def open_dropped(window, event) -> None:
    """Open the first thing dropped that the window opens: a session file, or a model."""
    for url in event.mimeData().urls():
        path = dropped_path(url)
        if path and path.endswith(".json"):
            window.menus.open_session_file(path)
            break
        if path:
            window.open_model(path)
            break
    event.acceptProposedAction()
