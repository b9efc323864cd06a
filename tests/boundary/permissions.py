"""Files and folders the person may not read, search or write, met by a process that file modes bind even
under root (privileges.drop_privileges): each case is refused in one sentence that names the file and says
"permission denied", or, where nothing needed is out of reach, works, and what the user had is kept."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from tests.boundary.harness import Case, Run
from tests.boundary.model_files import PROMPT, trace

DENIED = "permission denied"
PREVIOUS = b"the user's previous file"


def _unprivileged(run: Run) -> Run:
    return dataclasses.replace(run, unprivileged=True)


def _locked(relative: str, mode: int, run):
    """`run(case)` after `relative` (in the case's folder) is given `mode`; the run without privileges."""
    def build(case: Path) -> Run:
        made = run(case)
        os.chmod(case / relative, mode)
        return _unprivileged(made)
    return build


def _model(case: Path) -> Run:
    return trace(case / "model")


def _gguf(case: Path) -> Run:
    return trace(case / "model.gguf")


def _store(case: Path) -> Path:
    store = case / "home" / "store"
    store.mkdir(parents=True, exist_ok=True)
    return store


def _with_store(run):
    def build(case: Path) -> Run:
        _store(case)
        return run(case)
    return build


def _folder_with_previous(name: str):
    """A folder `ro/` holding the user's previous `name`, then the run."""
    def wrap(run):
        def build(case: Path) -> Run:
            (case / "ro").mkdir()
            (case / "ro" / name).write_bytes(PREVIOUS)
            return run(case)
        return build
    return wrap


def _previous_kept(name: str):
    def keeps(case: Path) -> None:
        folder = case / "ro"
        os.chmod(folder, 0o700)
        assert (folder / name).read_bytes() == PREVIOUS, f"the previous {name} was changed"
        left = [p.name for p in folder.iterdir() if p.name != name]
        assert not left, f"files left behind: {left}"
    return keeps


def _export(target: str):
    return lambda case: Run(("export", "--model", str(case / "model"), "--prompt", PROMPT, "-o", target))


def _session_save(target: str):
    return lambda case: Run(api="from explorer.views.session_state import SessionState, save\n"
                                f"save({target!r}, SessionState(model='m', prompt='typed by the person'))\n")


def _autosave(case: Path) -> Run:
    """A window's autosave in a store it cannot write: the person is not disturbed, and nothing crashes."""
    return Run(api="from PySide6.QtWidgets import QApplication, QMainWindow\napp = QApplication([])\n"
                   "from explorer.app.state.session_file import Autosaver, find_crashed\n"
                   "from explorer.views.session_state import SessionState\n"
                   "window = QMainWindow()\n"
                   "saver = Autosaver(lambda: SessionState(model='m', prompt='typed'), parent=window)\n"
                   "assert not saver.save_now(), 'an autosave was written into a folder without write permission'\n"
                   "told = window.statusBar().currentMessage()\n"
                   "assert 'not autosaved' in told and 'permission denied' in told, told\n"
                   "saver.discard()\nfind_crashed(saver.path, [])\n")


def _damaged_autosave_in_locked_store(case: Path) -> Run:
    store = _store(case)
    (store / "autosave-session-1-deadbeef.json").write_text("[1, 2]")
    return Run(api="from explorer.app.state.session_file import find_crashed\nnotices = []\n"
                   "find_crashed(notices=notices)\nassert notices, 'a damaged autosave went unmentioned'\n"
                   "assert 'could not be moved aside' in notices[0], notices\n")


def _settings(case: Path) -> Run:
    """The app's settings in a folder it cannot write: a value set is kept for the run, and nothing crashes."""
    (case / "config").mkdir()
    return Run(api="from PySide6.QtCore import QCoreApplication, QSettings\napp = QCoreApplication([])\n"
                   "from explorer.app.window.settings import AppSettings\n"
                   f"settings = AppSettings(QSettings({str(case / 'config' / 'settings.ini')!r}, "
                   "QSettings.Format.IniFormat))\n"
                   "import contextlib, io\nsaid = io.StringIO()\nsettings.theme = 'dark'\n"
                   "with contextlib.redirect_stderr(said):\n    settings.sync()\n"
                   "assert settings.theme == 'dark'\n"
                   "assert 'settings could not be saved' in said.getvalue(), said.getvalue()\n")


def _api_load(relative: str):
    return lambda case: Run(api=f"import explorer\nexplorer.load({str(case / relative)!r})\n")


def _pull(case: Path) -> Run:
    from tests.boundary.values import _pull as pull
    return pull()(case)


READS = [
    Case("a model folder without any permission", "message", _locked("model", 0o000, _model), says=DENIED),
    Case("a model folder without search permission", "message", _locked("model", 0o600, _model), says=DENIED),
    Case("a model folder without read permission", "message", _locked("model", 0o300, _model), outcome="either",
         says=DENIED),
    Case("model.safetensors without read permission", "message",
         _locked("model/model.safetensors", 0o000, _model), says="model.safetensors"),
    Case("config.json without read permission", "message", _locked("model/config.json", 0o000, _model),
         says="config.json"),
    Case("tokenizer.json without read permission", "message", _locked("model/tokenizer.json", 0o000, _model),
         says="tokenizer.json"),
    Case("a .gguf without read permission", "message", _locked("model.gguf", 0o000, _gguf), says="model.gguf"),
    Case("API load of a folder without permission", "message", _locked("model", 0o000, _api_load("model")),
         says=DENIED),
    Case("API load of a .gguf without read permission", "message",
         _locked("model.gguf", 0o000, _api_load("model.gguf")), says="model.gguf"),
]

WRITES = [
    Case("pull into a store without write permission", "message", _locked("home/store", 0o500, _with_store(_pull)),
         says=DENIED),
    Case("a .gguf loaded with a store without write permission", "message",
         _locked("home/store", 0o500, _with_store(_gguf)), outcome="works"),
    Case("models with a store without any permission", "message",
         _locked("home/store", 0o000, _with_store(lambda case: Run(("models",)))), outcome="either"),
    Case("export into a folder without write permission", "data loss",
         _locked("ro", 0o500, _folder_with_previous("map.png")(_export("ro/map.png"))), says="map.png",
         keeps=_previous_kept("map.png")),
    Case("export -o map.svg into a folder without write permission", "data loss",
         _locked("ro", 0o500, _folder_with_previous("map.svg")(_export("ro/map.svg"))), says="map.svg",
         keeps=_previous_kept("map.svg")),
    Case("trace --out into a folder without write permission", "data loss",
         _locked("ro", 0o500, _folder_with_previous("out.npz")(
             lambda case: Run(trace(case / "model").argv[:-1] + ("ro/out.npz",)))), says="out.npz",
         keeps=_previous_kept("out.npz")),
    Case("a session saved into a folder without write permission", "data loss",
         _locked("ro", 0o500, _folder_with_previous("s.json")(_session_save("ro/s.json"))), says=DENIED,
         keeps=_previous_kept("s.json")),
    Case("a session saved into a folder without search permission", "message",
         _locked("ro", 0o600, _folder_with_previous("s.json")(_session_save("ro/s.json"))), says="s.json"),
    Case("a session without read permission is opened", "message",
         _locked("s.json", 0o000, lambda case: (case.joinpath("s.json").write_text(json.dumps({
             "format": "transformer-explorer-session", "version": 1, "model": "m", "prompt": "hi"})),
             Run(api=f"from explorer.views.session_state import load\nload({str(case / 's.json')!r})\n"))[1]),
         says=DENIED),
    Case("an autosave into a store without write permission", "data loss",
         _locked("home/store", 0o500, _with_store(_autosave)), outcome="works"),
    Case("a damaged autosave in a store without write permission", "data loss",
         _locked("home/store", 0o500, _damaged_autosave_in_locked_store), outcome="works"),
    Case("settings in a folder without write permission", "data loss", _locked("config", 0o500, _settings),
         outcome="works"),
]

CASES = READS + WRITES
