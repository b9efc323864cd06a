"""What the program writes, where writing goes wrong: a full disk (a file-size limit, RLIMIT_FSIZE, on the
case's process: a write past it fails as a full disk's does), a read-only target, a name that is not UTF-8,
a symbolic link that loops, a store whose index is damaged, and two windows on one store. The promise: the
user's previous file is kept whole, no temporary file is left, and a refusal is one sentence."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from tests.boundary.harness import Case, Run
from tests.boundary.model_files import PROMPT, trace

PREVIOUS = b"the user's previous file"
FULL_AT = 4096                  # bytes: the disk is full once a file reaches this (the sentence on stderr fits)
LONG_PROMPT = " ".join([PROMPT] * 6)      # ~53 tokens of the 64 the model holds: its CSV and .npy pass FULL_AT


def _previous(name: str, run, mode: int | None = None):
    """`run(case)` once the user's previous `name` is in the case's folder (made `mode` if given)."""
    def build(case: Path) -> Run:
        (case / name).write_bytes(PREVIOUS)
        if mode is not None:
            os.chmod(case / name, mode)
        return run(case)
    return build


def _kept(name: str):
    def keeps(case: Path) -> None:
        assert (case / name).read_bytes() == PREVIOUS, f"the previous {name} was changed"
        left = [p.name for p in case.iterdir() if ".tmp" in p.name]
        assert not left, f"temporary files left behind: {left}"
    return keeps


def _full(run):
    return lambda case: dataclasses.replace(run(case), file_size_limit=FULL_AT)


def _unprivileged(run):
    return lambda case: dataclasses.replace(run(case), unprivileged=True)


def _export(target, prompt: str = PROMPT):
    return lambda case: Run(("export", "--model", str(case / "model"), "--prompt", prompt, "-o",
                             os.fsdecode(target)))


def _trace_out(target):
    return lambda case: Run(trace(case / "model").argv[:-1] + (os.fsdecode(target),))


SESSION = "SessionState(model='m', prompt='typed by the person ' * 400)"      # past FULL_AT


def _session_save(target):
    return lambda case: Run(api="import os\nfrom explorer.views.session_state import SessionState, save\n"
                                f"save(os.fsdecode({os.fsencode(target)!r}), {SESSION})\n")


def _animation(target: str):
    """The app's animation export (GIF, animated PNG or MP4) of a two-step run of the good model."""
    return lambda case: Run(api="import explorer\nfrom PySide6.QtWidgets import QApplication\n"
                                "app = QApplication([])\n"
                                "from explorer.app.figures.animation import export_animation\n"
                                f"run = explorer.load({str(case / 'model')!r}).run('hi', steps=2)\n"
                                f"export_animation(run.trace, {target!r}, 0, 0)\n")


def _animation_then(target: str, at_last: str, steps: int = 2):
    """The animation export of a `steps`-step run, with `at_last` (Python lines on `path`, the target) run once
    the writer has taken the last frame: while the file is finished, just before it is moved into place."""
    last = "".join(f"        {line}\n" for line in at_last.splitlines())
    return lambda case: Run(api="import os\nfrom pathlib import Path\nimport explorer\n"
                                "from PySide6.QtWidgets import QApplication\napp = QApplication([])\n"
                                "from explorer.app.figures.animation import export_animation\n"
                                f"run = explorer.load({str(case / 'model')!r}).run('hi', steps={steps})\n"
                                f"path = Path({target!r})\n"
                                "def progress(done, total):\n    if done == total:\n" + last +
                                "export_animation(run.trace, path, 0, 0, progress=progress)\n")


def _folder_kept(name: str):
    def keeps(case: Path) -> None:
        assert (case / name).is_dir() and (case / name / "inside.txt").read_bytes() == PREVIOUS, \
            f"the folder {name} put there during the export was changed"
        left = [p.name for p in case.iterdir() if ".tmp" in p.name]
        assert not left, f"temporary files left behind: {left}"
    return keeps


ANIMATION_STEPS = {".gif": 3, ".png": 2, ".mp4": 6}     # each file past ANIMATION_FULL_AT, each frame under it
# (a GIF of 2 steps came to under 32 KiB once the key labels were measured rather than guessed: 3 steps)
ANIMATION_FULL_AT = 32 << 10                           # a 1000 x 800 frame's PNG is ~21 KB


def _autosave_full(case: Path) -> Run:
    """A window's autosave on a full disk: the autosave it wrote before is kept whole, and nothing is said."""
    return Run(api="from PySide6.QtCore import QCoreApplication\napp = QCoreApplication([])\n"
                   "from explorer.app.state.session_file import Autosaver\n"
                   "from explorer.views.session_state import SessionState, load\n"
                   f"saver = Autosaver(lambda: state, path={str(case / 'autosave-session-1-ab.json')!r})\n"
                   "state = SessionState(model='m', prompt='before')\nassert saver.save_now()\n"
                   "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                   f"resource.setrlimit(resource.RLIMIT_FSIZE, ({FULL_AT}, {FULL_AT}))\n"
                   "state = SessionState(model='m', prompt='after ' * 2000)\n"
                   "assert not saver.save_now(), 'an autosave past the full disk was reported written'\n"
                   "assert 'too large' in saver.problem, saver.problem\n"
                   "assert load(saver.path).prompt == 'before', 'the previous autosave was lost'\n")


FULL_DISK = [
    Case(f"export {suffix} on a full disk", "data loss",
         _previous(f"map{suffix}", _full(_export(f"map{suffix}", prompt))),
         says=f"map{suffix}: the file would be too large", keeps=_kept(f"map{suffix}"))
    for suffix, prompt in ((".png", PROMPT), (".svg", PROMPT), (".csv", LONG_PROMPT), (".npy", LONG_PROMPT))
] + [
    Case(f"animation {suffix} on a full disk", "data loss",
         _previous(f"anim{suffix}", _full(_animation(f"anim{suffix}"))), says=f"Cannot write anim{suffix}: its frames",
         keeps=_kept(f"anim{suffix}"))
    for suffix in (".gif", ".png", ".mp4")
] + [
    Case(f"animation {suffix} on a disk that fills at its final write", "data loss",
         _previous(f"anim{suffix}", lambda case, suffix=suffix: dataclasses.replace(_animation_then(
             f"anim{suffix}", "pass", ANIMATION_STEPS[suffix])(case), file_size_limit=ANIMATION_FULL_AT)),
         says=f"Cannot write anim{suffix}: the file would be too large", keeps=_kept(f"anim{suffix}"))
    for suffix in (".gif", ".png", ".mp4")
] + [
    Case("a session saved on a full disk", "data loss", _previous("s.json", _full(_session_save("s.json"))),
         says="s.json", keeps=_kept("s.json")),
    Case("an autosave on a full disk", "data loss", _autosave_full, outcome="works"),
]

READ_ONLY = [
    Case("export onto a read-only map.png", "data loss",
         _previous("map.png", _unprivileged(_export("map.png")), mode=0o444), says="read-only", keeps=_kept("map.png")),
    Case("trace --out onto a read-only out.npz", "data loss",
         _previous("out.npz", _unprivileged(_trace_out("out.npz")), mode=0o444), says="read-only",
         keeps=_kept("out.npz")),
    Case("a session saved onto a read-only file", "data loss",
         _previous("s.json", _unprivileged(_session_save("s.json")), mode=0o444), says="read-only",
         keeps=_kept("s.json")),
]

ANIMATION_FINAL_WRITE = [
    Case(f"animation {suffix} onto a file made read-only at its final write", "data loss",
         _previous(f"anim{suffix}", _unprivileged(_animation_then(f"anim{suffix}", "os.chmod(path, 0o444)"))),
         says=f"anim{suffix}: it is read-only", keeps=_kept(f"anim{suffix}"))
    for suffix in (".gif", ".png", ".mp4")
] + [
    Case(f"animation {suffix} onto a folder made at its final write", "data loss",
         _previous(f"anim{suffix}", _animation_then(
             f"anim{suffix}", f"path.unlink()\npath.mkdir()\n(path / 'inside.txt').write_bytes({PREVIOUS!r})")),
         says=f"anim{suffix}: it is a folder", keeps=_folder_kept(f"anim{suffix}"))
    for suffix in (".gif", ".png", ".mp4")
]

NOT_UTF8 = b"caf\xe9"           # Latin-1 bytes, as an old file system or archive names a file
NON_UTF8_NAMES = [
    Case("export to a name that is not UTF-8", "message", _export(NOT_UTF8 + b".png"), outcome="works"),
    Case("trace --out to a name that is not UTF-8", "message", _trace_out(NOT_UTF8 + b".npz"), outcome="works"),
    Case("a session saved to a name that is not UTF-8", "message", _session_save(NOT_UTF8 + b".json"),
         outcome="works"),
    Case("an export refused in a folder whose name is not UTF-8", "message",
         _export(NOT_UTF8 + b"/none/map.png"), says="caf\\xe9/none/map.png"),
]


def _loop(name: str, run):
    def build(case: Path) -> Run:
        (case / f"{name}.other").symlink_to(case / name)
        (case / name).symlink_to(case / f"{name}.other")
        return run(case)
    return build


LOOPS = [
    Case("--model a symbolic link that loops", "hang", _loop("loop", lambda case: trace(case / "loop")),
         says="symbolic link that loops"),
    Case("--model a link to nowhere", "message",
         lambda case: ((case / "gone.gguf").symlink_to(case / "nowhere.gguf"), trace(case / "gone.gguf"))[1],
         says="gone.gguf"),
    Case("export -o a symbolic link that loops", "hang", _loop("map.png", _export("map.png")), says="loops"),
    Case("trace --out a symbolic link that loops", "hang", _loop("out.npz", _trace_out("out.npz")), says="loops"),
    Case("a session saved to a symbolic link that loops", "hang", _loop("s.json", _session_save("s.json")),
         says="loops"),
    Case("a session opened from a symbolic link that loops", "hang",
         _loop("s.json", lambda case: Run(api="from explorer.views.session_state import load\n"
                                               f"load({str(case / 's.json')!r})\n")),
         says="s.json is a symbolic link that loops"),
]


def _store_file(relative: str, content: str, run):
    def build(case: Path) -> Run:
        path = case / "home" / "store" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return run(case)
    return build


def _models(case: Path) -> Run:
    return Run(("models",))


def _opened_then_listed(case: Path) -> Run:
    """A model opened (it goes on the recent list) with a damaged list: the list is written anew, and lists it."""
    return Run(api=f"import explorer\nfrom explorer.core import store\nexplorer.load({str(case / 'model')!r})\n"
                   "store.remember_recent({path!r})\nassert store.recent_paths(), 'the recent list was not mended'\n"
               .replace("{path!r}", repr(str(case / "model"))))


DAMAGED_STORE = [
    Case("models with a recent list that is not JSON", "traceback", _store_file("recent.json", "[{", _models),
         outcome="works"),
    Case("models with a recent list of numbers", "traceback", _store_file("recent.json", "[1, 2, null]", _models),
         outcome="works"),
    Case("models with a recent list nested 100,000 deep", "traceback",
         _store_file("recent.json", "[" * 100_000 + "]" * 100_000, _models), outcome="works"),
    Case("a damaged recent list is mended by the next open", "data loss",
         _store_file("recent.json", '{"not": "a list"}', _opened_then_listed), outcome="works"),
    Case("models with a pulled.json that is not JSON", "traceback",
         _store_file("smollm2-135m/pulled.json", "{", _models), outcome="works"),
]


def _second_window(case: Path) -> Run:
    """A second window starts while the first one runs: the first one's autosave is neither offered nor moved."""
    store = case / "home" / "store"
    store.mkdir(parents=True)
    first = store / f"autosave-session-{os.getpid()}-0123abcd.json"
    first.write_text(json.dumps({"format": "transformer-explorer-session", "version": 1, "model": "m",
                                 "prompt": "typed in the first window", "pid": os.getpid()}))
    return Run(api="from explorer.app.state.session_file import find_crashed\nnotices = []\n"
                   "assert find_crashed(notices=notices) is None, 'a running window\\'s autosave was offered'\n"
                   "assert not notices, notices\n")


def _first_window_kept(case: Path) -> None:
    kept = list((case / "home" / "store").glob("autosave-session-*.json"))
    assert len(kept) == 1 and b"typed in the first window" in kept[0].read_bytes(), "the first window's autosave went"


def _two_pulls(case: Path) -> Run:
    """Two pulls of one model into one store at once (two windows, or a window and the command line): each
    works in a folder of its own and moves whole files into place, so both succeed and the store holds it whole."""
    from tests.boundary.values import _pull
    run = _pull()(case)
    both = run.api.replace("sys.exit(cli.main(", "import os\nother = os.fork()\ncode = cli.main(") + (
        "if other == 0:\n    os._exit(code)\n"
        "_, status = os.waitpid(other, 0)\n"
        "assert code == 0 and os.waitstatus_to_exitcode(status) == 0, (code, status)\n")
    return Run(api=both.replace('links]))', 'links])'))


def _pulled_whole(case: Path) -> None:
    pulled = case / "home" / "store" / "tiny" / "tiny.gguf"
    assert pulled.read_bytes() == (case / "model.gguf").read_bytes(), "the store does not hold the model whole"
    left = [p.name for p in (case / "home" / "store").iterdir() if p.name.startswith(".pull-")]
    assert not left, f"work folders left: {left}"


TWO_WINDOWS = [
    Case("a second window leaves a running window's autosave alone", "data loss", _second_window,
         outcome="works", keeps=_first_window_kept),
    Case("two pulls into one store at once", "data loss", _two_pulls, outcome="works", keeps=_pulled_whole),
]

CASES = FULL_DISK + READ_ONLY + ANIMATION_FINAL_WRITE + NON_UTF8_NAMES + LOOPS + DAMAGED_STORE + TWO_WINDOWS
