"""`python -m explorer attribute`: which parts of the model wrote the logit of one token.

Prints z_N = embed + sum(heads) + sum(mlp) + rest for the next token after --position (default:
the last prompt token), N = --token-id (default: the model's top prediction there). The parts
come from core/attribution.py (the final norm's scale frozen at that position, so they sum exactly).
"""
from __future__ import annotations

import json

import numpy as np

from explorer.core.errors import ExplorerError
from explorer.tools import arguments


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="model folder, .gguf file or catalog name")
    parser.add_argument("--prompt", type=arguments.text, required=True, help="the text the model reads")
    parser.add_argument("--position", type=arguments.count(), default=None,
                        help="the prompt position whose next-token logit is split (default: the last)")
    parser.add_argument("--token-id", type=arguments.count(), default=None,
                        help="the token whose logit is split (default: the model's top prediction)")
    parser.add_argument("--top", type=arguments.count(), default=12, help="parts listed without --json (default 12)")
    parser.add_argument("--device", type=arguments.device, default="cpu", help="cpu, cuda, mps or auto (default cpu)")
    parser.add_argument("--json", action="store_true",
                        help='print {"position", "token_id", "logit", "embed", "heads", "mlp", "rest", ...}')


def run(args) -> int:
    from explorer.api import load  # at run, not at the top: --help imports every command module

    if not args.prompt:
        raise ExplorerError("--prompt is empty: write some text")
    model = load(args.model, device=args.device)
    ids = np.asarray(model.loaded.tokenizer.encode(args.prompt).ids, dtype=np.int64)
    if ids.size == 0:
        raise ExplorerError("--prompt gives no tokens: write some text")
    result = model.attribute(ids, args.position, args.token_id)
    if args.json:
        print(json.dumps(result.as_json()))
        return 0
    tokenizer = model.loaded.tokenizer
    print(f"logit of {tokenizer.display(result.token_id)!r} (id {result.token_id}) after position "
          f"{result.position} ({tokenizer.display(int(ids[result.position]))!r}): {result.logit:.4f}")
    if result.capped_logit is not None:
        print(f"  (the pre-softcap logit; the model's softcap makes it {result.capped_logit:.4f})")
    print(f"  {result.decomposition}")
    for name, value in result.largest(args.top):
        print(f"  {name:>10}  {value:+10.4f}")
    print(f"  {'sum':>10}  {result.total():+10.4f}")
    return 0
