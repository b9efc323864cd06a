"""The README's what-if table: convert a model to other attention variants and compare decoding.

    .venv/bin/python bench/bench_convert.py [--model smollm2-135m] [--steps 32] [--variants gqa-3 mqa mla-320 ...]

For each variant: cache bytes per token, the mean KL divergence of the converted model's next-token
distribution from the original's, top-1 agreement, and the conversion time. Prints one JSON list.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from explorer.core.runtime import load_model  # noqa: E402
from explorer.core.store import resolve  # noqa: E402
from explorer.core.what_if import what_if  # noqa: E402

PROMPT = "The capital of France is"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=32, help="next-token predictions compared")
    parser.add_argument("--variants", nargs="+", default=["gqa-3", "mqa", "mla-320", "mla-256", "mla-192", "mla-128"])
    args = parser.parse_args()
    loaded = load_model(resolve(args.model))
    ids = loaded.tokenizer.encode(PROMPT).ids
    rows = []
    for variant in args.variants:
        start = time.perf_counter()
        result = what_if(loaded, variant, ids, args.steps)
        seconds = time.perf_counter() - start
        last = result.comparisons[-1]
        rows.append({
            "variant": result.variant,
            "bytes_per_token": int(last.converted_bytes // result.converted.n_tokens),
            "mean_kl": round(float(np.mean([c.kl for c in result.comparisons])), 4),
            "top1_agreement": round(float(np.mean([c.top1_agrees for c in result.comparisons])), 3),
            "seconds_with_decoding": round(seconds, 2),
        })
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
