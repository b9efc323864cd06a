"""Running one hostile case in a process of its own, with its own HOME and model store, and the contract
every case must keep (a boundary nothing gets through):

- the command line exits 2 with one line and no traceback or Rust panic; the API raises an ExplorerError
  (its child prints the sentence and exits 2); a case whose input is legal exits 0;
- it ends within TIMEOUT_S (a hang is killed there) and its peak memory stays within EXTRA_MEMORY_MB of a
  normal small run's;
- what the user had is kept (each case may check its files afterwards).
"""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.boundary.privileges import drop_privileges, writable_again

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 20.0            # the kill limit: a normal small run takes ~2 s; a hang or a 20-second tokenizer is past it
CONTRACT_S = 5.0            # the bound on a case's own time; the report names every case over it
EXTRA_MEMORY_MB = 300       # over a normal small run's peak (the bound)
# The API's child: run the case's code; an ExplorerError is the one sentence and exit 2, anything else a traceback.
API_CHILD = """
import sys
from explorer.core.errors import ExplorerError
source = open(sys.argv[1], encoding="utf-8").read()
try:
    exec(compile(source, "case", "exec"), {"__name__": "case"})
except ExplorerError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(2)
"""


@dataclass(frozen=True)
class Run:
    """What a case runs: the CLI's arguments, or API code (a Python source run by API_CHILD)."""

    argv: tuple[str, ...] = ()
    api: str = ""
    file_size_limit: int | None = None       # RLIMIT_FSIZE in bytes: a disk that fills at this size
    env: dict = field(default_factory=dict)
    fresh: bool = False                      # a new interpreter (`python -m explorer`), not a fork of the server
    unprivileged: bool = False               # file modes bind it, even under root (privileges.drop_privileges)


@dataclass(frozen=True)
class Outcome:
    returncode: int | None                   # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float


@dataclass(frozen=True)
class Case:
    name: str
    kind: str                                # the class: data loss, hang, bomb, traceback, nan, message
    build: Callable[[Path], Run]             # the case's folder (a copy of the good model in it at model/) -> Run
    outcome: str = "refused"                 # "refused" (exit 2), "works" (exit 0) or "either"
    says: str = ""                           # a piece of the refusal's sentence
    keeps: Callable[[Path], None] | None = None     # asserts that what the user had is still there


def environment(case_dir: Path, extra: dict) -> dict:
    home = case_dir / "home"
    home.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("TRANSFORMER_EXPLORER", "HF_", "XDG_"))}
    env.update(HOME=str(home), TRANSFORMER_EXPLORER_HOME=str(home / "store"), HF_HOME=str(home / "hf"),
               XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
               TRANSFORMER_EXPLORER_NO_RESTORE="1", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def _limits(file_size_limit: int | None, unprivileged: bool = False):
    def apply() -> None:
        os.setsid()
        if unprivileged:
            drop_privileges()
        if file_size_limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)       # a write past the limit fails with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))
    return apply


def command(run: Run, case_dir: Path) -> list[str]:
    if run.api:
        source = case_dir / "case_source.py"
        source.write_text(run.api, encoding="utf-8")
        return [sys.executable, "-c", API_CHILD, str(source)]
    return [sys.executable, "-m", "explorer", *run.argv]


def execute_fresh(run: Run, case_dir: Path, timeout: float = TIMEOUT_S) -> Outcome:
    """Run in a new interpreter (and session, so that a hang is killed with its children); its own peak RSS."""
    out, err = case_dir / "stdout.txt", case_dir / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        start = time.monotonic()
        child = subprocess.Popen(command(run, case_dir), cwd=case_dir, env=environment(case_dir, run.env),
                                 stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                 preexec_fn=_limits(run.file_size_limit, run.unprivileged))
        returncode, usage = None, None
        while time.monotonic() - start < timeout:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                returncode = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.02)
        else:
            os.killpg(child.pid, signal.SIGKILL)
            _, _, usage = os.wait4(child.pid, 0)
        child.returncode = returncode if returncode is not None else -9
        seconds = time.monotonic() - start
    return Outcome(returncode, out.read_text(errors="replace"), err.read_text(errors="replace"), seconds,
                   usage.ru_maxrss / 1024)


class ForkServer:
    """tests/boundary/forkserver.py, started once: it forks a child per case (see there why)."""

    def __init__(self) -> None:
        # One thread, as each case's environment asks: torch reads it at its import, here, before the fork
        # (with two threads a tiny model's matmuls spun against the rest of a busy machine: 50 ms each at load 14).
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("forkserver.py"))],
                                        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def execute(self, run: Run, case_dir: Path, timeout: float = TIMEOUT_S) -> Outcome:
        if run.fresh:
            return execute_fresh(run, case_dir, timeout)
        out, err = case_dir / "stdout.txt", case_dir / "stderr.txt"
        request = {"argv": list(run.argv), "api": run.api, "cwd": str(case_dir), "env": environment(case_dir, run.env),
                   "file_size_limit": run.file_size_limit, "unprivileged": run.unprivileged,
                   "stdout": str(out), "stderr": str(err), "timeout": timeout}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        return Outcome(answer["returncode"], out.read_text(errors="replace"), err.read_text(errors="replace"),
                       answer["seconds"], answer["peak_mb"])

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def broken_contract(case: Case, outcome: Outcome, baseline_mb: float) -> list[str]:
    """Every way `outcome` breaks the contract, in words (empty when the case is handled cleanly)."""
    faults = []
    if outcome.returncode is None:
        faults.append(f"hung: killed after {outcome.seconds:.0f} s")
    text = outcome.stdout + outcome.stderr
    if "Traceback" in text or "panicked" in text or "PanicException" in text:
        faults.append("a traceback or panic: " + outcome.stderr.strip().splitlines()[-1][:300])
    wanted = {"refused": (2,), "works": (0,), "either": (0, 2)}[case.outcome]
    if outcome.returncode is not None and outcome.returncode not in wanted:
        faults.append(f"exit {outcome.returncode}, not {' or '.join(map(str, wanted))}: {outcome.stderr[-300:]!r}")
    if outcome.returncode == 2:
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        if len(lines) != 1:
            faults.append(f"{len(lines)} lines on stderr, not one: {outcome.stderr[:400]!r}")
        elif case.says and case.says not in lines[0]:
            faults.append(f"the sentence does not say {case.says!r}: {lines[0][:300]!r}")
    if outcome.peak_mb > baseline_mb + EXTRA_MEMORY_MB:
        faults.append(f"peak memory {outcome.peak_mb:.0f} MB, over {baseline_mb:.0f} + {EXTRA_MEMORY_MB} MB")
    return faults


def judged(case: Case, outcome: Outcome, case_dir: Path, baseline_mb: float) -> list[str]:
    """broken_contract, and what the case's `keeps` finds lost; then the case's folder is made removable."""
    faults = broken_contract(case, outcome, baseline_mb)
    try:
        if case.keeps is not None and outcome.returncode is not None:
            case.keeps(case_dir)
    except AssertionError as error:
        faults.append(str(error))
    finally:
        writable_again(case_dir)
    return faults
