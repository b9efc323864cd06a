"""`python -m explorer patch`: activation patching from a clean prompt into a corrupted one.

For each site the corrupted run is repeated with that site taken from the clean run, and
logit(target) - logit(against) read at the last position (explorer/core/patching.py):

  --site head    layers x heads: one head's output O_h at every position
  --site resid   layers x positions: the residual stream entering a layer at one position

--json prints one object: {"clean": d, "corrupt": d, "logit_diff": [[...], ...], "site": ...}
(with --metric prob the map is under "prob" and clean/corrupt are probabilities). The prompts
must have the same number of tokens, and --target and --against must each be one token;
otherwise the command says so in one line and exits with status 2.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from explorer.tools import arguments


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="model folder, .gguf file or catalog name")
    parser.add_argument("--clean", type=arguments.text, required=True,
                        help="the prompt whose activations are patched in")
    parser.add_argument("--corrupt", type=arguments.text, required=True,
                        help="the prompt they are patched into (same token count)")
    parser.add_argument("--target", type=arguments.text, required=True,
                        help="the token the clean prompt predicts (one token)")
    parser.add_argument("--against", type=arguments.text, required=True,
                        help="the token to compare it with (one token)")
    parser.add_argument("--site", choices=("head", "resid"), default="head", help="head (default) or resid")
    parser.add_argument("--metric", choices=("logit_diff", "prob"), default="logit_diff",
                        help="logit(target) - logit(against) (default) or the probability of the target")
    parser.add_argument("--device", type=arguments.device, default="cpu", help="cpu, cuda, mps or auto (default cpu)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    from explorer.api import load  # at run, not at the top: --help imports every command module

    model = load(args.model, device=args.device, dtype=args.dtype)
    result = model.patch(args.clean, args.corrupt, args.target, args.against, args.site, args.metric)
    if args.json:
        out = result.to_json()
        print(json.dumps({"clean": out["clean"], "corrupt": out["corrupt"],
                          args.metric: out[args.metric], "site": args.site}))
        return 0
    _print_summary(result, sys.stdout)
    return 0


def _print_summary(result, stream) -> None:
    """clean/corrupt, then the five sites that move the metric most towards the clean run."""
    print(f"{result.metric}: clean {result.clean:.4f}, corrupt {result.corrupt:.4f}", file=stream)
    columns = "head" if result.site == "head" else "position"
    order = np.argsort(-result.values, axis=None)[:5]
    for flat in order:
        layer, index = np.unravel_index(flat, result.values.shape)
        print(f"  layer {layer:3d} {columns} {index:3d}: {result.values[layer, index]:.4f}", file=stream)
