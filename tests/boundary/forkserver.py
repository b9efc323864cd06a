"""A process that imports the explorer and torch once, then forks one child per boundary case.

Each case still runs in a process of its own, with its own HOME, store, working folder and limits, but
without paying torch's import again (seconds on a busy 2-core machine), so that the corpus runs in
minutes. The child runs the CLI's entry point (cli.main, as `python -m explorer` does) or API code.
Protocol: one JSON request a line on stdin, one JSON answer a line on stdout.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import traceback

import numpy  # noqa: F401  (imported before the fork: what every case needs)
import safetensors.torch  # noqa: F401
import tokenizers  # noqa: F401
import torch  # noqa: F401

import explorer.api  # noqa: F401
import explorer.core.loaders  # noqa: F401
import explorer.tools.trace_cmd  # noqa: F401
from explorer import cli
from explorer.core.errors import ExplorerError
from tests.boundary.privileges import drop_privileges


def _child(request: dict) -> int:
    """The case's body in the forked child: returns its exit status the way the interpreter would."""
    os.setsid()
    if request["unprivileged"]:
        drop_privileges()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if request["file_size_limit"] is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)           # a write past the limit fails with EFBIG
        limit = request["file_size_limit"]
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    for fd, name in ((1, "stdout"), (2, "stderr")):
        out = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    try:
        if request["api"]:
            try:
                exec(compile(request["api"], "case", "exec"), {"__name__": "case"})
            except ExplorerError as error:
                print(f"error: {error}", file=sys.stderr)
                return 2
            return 0
        return int(cli.main(list(request["argv"])) or 0)
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        print(exit_.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: B036 -- what the interpreter does with anything uncaught (a Rust panic too)
        traceback.print_exc()
        return 1


def serve_one(request: dict) -> dict:
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = _child(request)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    returncode, usage = None, None
    while time.monotonic() - start < request["timeout"]:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            returncode = os.waitstatus_to_exitcode(status)
            break
        time.sleep(0.01)
    else:
        os.killpg(pid, signal.SIGKILL)
        _, _, usage = os.wait4(pid, 0)
    return {"returncode": returncode, "seconds": time.monotonic() - start, "peak_mb": usage.ru_maxrss / 1024}


def main() -> None:
    for line in sys.stdin:
        answer = serve_one(json.loads(line))
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
