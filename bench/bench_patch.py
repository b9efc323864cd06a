"""Time the full activation-patching map of a model (default SmolLM2-135M: 30 layers x 9 heads = 270 sites).

    python bench/bench_patch.py [--model smollm2-135m] [--site head|resid] [--threads N]

Prints one JSON object: the prompts' token counts, the number of sites, the seconds the map took
(after loading), seconds per site, and the clean/corrupted logit differences. The target: the head
map of SmolLM2-135M with 10-token prompts within 20 s on a 2-core CPU.
"""
from __future__ import annotations

import argparse
import json
import time

CLEAN = "The Eiffel Tower is located in the city of"
CORRUPT = "The Colosseum is located in the city of"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--site", default="head", choices=("head", "resid"))
    parser.add_argument("--clean", default=CLEAN)
    parser.add_argument("--corrupt", default=CORRUPT)
    parser.add_argument("--target", default=" Paris")
    parser.add_argument("--against", default=" Rome")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()

    import torch

    from explorer.core import patching
    from explorer.core.runtime import load_model
    from explorer.core.store import resolve

    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    loaded = load_model(resolve(args.model))
    load_s = time.perf_counter() - started
    tokenizer = loaded.tokenizer
    clean, corrupt = tokenizer.encode(args.clean).ids, tokenizer.encode(args.corrupt).ids
    target = patching.single_token(tokenizer, args.target, "--target")
    against = patching.single_token(tokenizer, args.against, "--against")
    started = time.perf_counter()
    result = patching.patch_map(loaded, clean, corrupt, target, against, args.site)
    seconds = time.perf_counter() - started
    print(json.dumps({
        "model": args.model, "site": args.site, "tokens": len(clean), "sites": int(result.values.size),
        "threads": torch.get_num_threads(), "load_s": round(load_s, 2), "map_s": round(seconds, 2),
        "ms_per_site": round(1000 * seconds / result.values.size, 2),
        "clean_logit_diff": round(result.clean, 3), "corrupt_logit_diff": round(result.corrupt, 3)}))


if __name__ == "__main__":
    main()
