"""`python -m explorer heads`: previous-token, induction and sink scores of every head.

The model reads s = ids repeated --repeat times (default 2), nothing prepended; without --ids the
ids are random ones of its own vocabulary (seeded). Definitions in core/head_scores.py.
"""
from __future__ import annotations

import json

import numpy as np

from explorer.core.errors import ExplorerError
from explorer.tools import arguments

NAMES = ("previous_token", "induction", "sink")


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="model folder, .gguf file or catalog name")
    parser.add_argument("--ids", default=None, help='comma-separated token ids, e.g. "12,7,301" (default: random)')
    parser.add_argument("--repeat", type=arguments.count(2), default=2,
                        help="how many times the ids repeat (default 2)")
    parser.add_argument("--seed", type=arguments.seed, default=0, help="seed of the random ids (default 0)")
    parser.add_argument("--top", type=arguments.count(), default=5,
                        help="heads listed per score without --json (default 5)")
    parser.add_argument("--device", type=arguments.device, default="cpu", help="cpu, cuda, mps or auto (default cpu)")
    parser.add_argument("--json", action="store_true",
                        help='print {"previous_token": [[...]], "induction": [[...]], "sink": [[...]]}'
                             ' (layers x heads)')


def parse_ids(text: str) -> np.ndarray:
    """ "12, 7,301" -> array([12, 7, 301]); anything else is an ExplorerError naming the bad part."""
    parts = [part.strip() for part in text.split(",")]
    bad = next((part for part in parts if not (part.isascii() and part.isdigit())), None)  # '²'.isdigit() too
    if bad is not None:
        raise ExplorerError(f"--ids {text!r} has {bad!r}, which is not a token id (write ids like 12,7,301)")
    past = next((part for part in parts if int(part) > np.iinfo(np.int64).max), None)
    if past is not None:        # numpy would raise OverflowError; no vocabulary comes near 2^63
        raise ExplorerError(f"--ids has {past}, which is past any vocabulary (write ids like 12,7,301)")
    return np.array([int(part) for part in parts], dtype=np.int64)


def run(args) -> int:
    from explorer.api import load  # at run, not at the top: --help imports every command module

    ids = None if args.ids is None else parse_ids(args.ids)
    scores = load(args.model, device=args.device).heads(ids, args.repeat, seed=args.seed)
    if args.json:
        print(json.dumps(scores.as_json()))
        return 0
    print(f"{len(scores.ids)} ids repeated {scores.repeat} times")
    for name in NAMES:
        values = getattr(scores, name)
        order = np.argsort(-values, axis=None)[: args.top]
        best = ", ".join(f"L{l}.H{h} {values[l, h]:.3f}" for l, h in zip(*np.unravel_index(order, values.shape)))
        print(f"  {name:>14}: {best}")
    return 0
