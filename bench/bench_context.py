"""Cost against context length: the engine (full recording) and transformers, 512 to 8,000 tokens.

    .venv/bin/python bench/bench_context.py [--tokens 512,1024,2048,4096,8000] [--steps 8]
        [--json out.json] [--plot docs/benchmarks/context.png]

For each length and each side, one fresh process (so that its peak RSS is its own) builds
SmolLM2-135M's architecture with seeded random weights (speed does not depend on the
values), prefills a prompt of that length, then decodes --steps tokens. It reports the
prefill time, the median decode ms per token, what the side keeps of its attention
(the engine: Trace.nbytes(); transformers eager: the output attentions; sdpa: nothing)
and the process's peak RSS (VmHWM). The sides:

  engine             our Decoder, full recording (maps rebuilt on demand from Q and K)
  transformers_sdpa  transformers' forward with scaled_dot_product_attention, cached decode
  transformers_eager transformers' eager forward with output_attentions=True, where its
                     (L, H, T, T) attentions fit in --eager-budget-gb

The load average is recorded with every figure: on a shared machine it says how far to trust it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SIDES = ("engine", "transformers_sdpa", "transformers_eager")


def peak_rss_mb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmHWM"))


def measure_engine(hf_config, tensors, ids, steps: int, record_dtype: str) -> dict:
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors

    loaded = from_tensors(hf_config, tensors, name="SmolLM2-135M (random weights)", take=True)   # as load_model
    decoder = Decoder(loaded, RecordOptions(dtype=record_dtype), capacity=len(ids) + steps + 1)
    decoder.prefill(ids[:32])
    decoder.step()                                                          # warm up
    start = time.perf_counter()
    decoder.prefill(ids)
    prefill_s = time.perf_counter() - start
    per_token = []
    for _ in range(steps):
        start = time.perf_counter()
        decoder.step()
        per_token.append((time.perf_counter() - start) * 1000.0)
    return {"prefill_s": prefill_s, "decode_ms": statistics.median(per_token), "kept_bytes": decoder.trace.nbytes()}


def measure_transformers(hf_config, tensors, ids, steps: int, attention: str) -> dict:
    import torch
    from bench_engine import Reference, built_reference

    model = built_reference(hf_config, tensors, "eager" if attention == "eager" else "sdpa")
    eager = attention == "eager"
    warm = Reference(model, torch.as_tensor(ids[:32])[None], attentions=eager)
    warm.prefill()
    reference = Reference(model, torch.as_tensor(ids)[None], attentions=eager)
    start = time.perf_counter()
    with torch.inference_mode():
        out = model(reference.ids, output_attentions=eager, use_cache=True)
    prefill_s = time.perf_counter() - start
    kept = sum(a.numel() * a.element_size() for a in out.attentions) if eager else 0
    reference.cache, reference.token = out.past_key_values, out.logits[:, -1:].argmax(-1)
    del out
    per_token = []
    for _ in range(steps):
        start = time.perf_counter()
        reference.step()
        per_token.append((time.perf_counter() - start) * 1000.0)
    return {"prefill_s": prefill_s, "decode_ms": statistics.median(per_token), "kept_bytes": kept}


def measure_one(side: str, n_tokens: int, steps: int, record_dtype: str) -> dict:
    """One side at one length, in this process."""
    import numpy as np
    import torch
    from bench_engine import SMOLLM2_135M, random_tensors

    tensors = random_tensors(SMOLLM2_135M)
    ids = np.random.default_rng(0).integers(0, SMOLLM2_135M["vocab_size"], n_tokens).astype(np.int64)
    before = [round(x, 2) for x in os.getloadavg()]
    if side == "engine":
        result = measure_engine(SMOLLM2_135M, tensors, ids, steps, record_dtype)
    else:
        result = measure_transformers(SMOLLM2_135M, tensors, ids, steps, side.removeprefix("transformers_"))
    return {"side": side, "tokens": n_tokens, "prefill_s": round(result["prefill_s"], 2),
            "decode_ms_per_token": round(result["decode_ms"], 1), "kept_MB": round(result["kept_bytes"] / 1e6, 1),
            "peak_rss_MB": peak_rss_mb(), "threads": torch.get_num_threads(), "load_average": before,
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}


def eager_attention_bytes(n_tokens: int) -> int:
    """transformers' output_attentions at T tokens: L * H * T^2 float32 (all layers kept at once)."""
    from bench_engine import SMOLLM2_135M

    return SMOLLM2_135M["num_hidden_layers"] * SMOLLM2_135M["num_attention_heads"] * n_tokens ** 2 * 4


def run_all(args) -> list[dict]:
    rows = []
    for n_tokens in [int(t) for t in args.tokens.split(",")]:
        for side in args.sides.split(","):
            if side == "transformers_eager" and eager_attention_bytes(n_tokens) > args.eager_budget_gb * 1e9:
                rows.append({"side": side, "tokens": n_tokens, "skipped": (
                    f"its attentions would take {eager_attention_bytes(n_tokens) / 1e9:.1f} GB")})
                print(json.dumps(rows[-1]), flush=True)
                continue
            child = subprocess.run([sys.executable, __file__, "--one", side, "--tokens", str(n_tokens),
                                    "--steps", str(args.steps), "--record-dtype", args.record_dtype,
                                    "--threads", str(args.threads)],
                                   capture_output=True, text=True)
            if child.returncode:
                row = {"side": side, "tokens": n_tokens, "failed": (child.stderr.strip().splitlines() or ["?"])[-1]}
            else:
                row = json.loads(child.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def plot(rows: list[dict], path: str) -> None:
    """Prefill seconds, decode ms per token and peak RSS against tokens, one line per side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(13, 3.8), constrained_layout=True)
    for side in SIDES:
        measured = [r for r in rows if r["side"] == side and "prefill_s" in r]
        tokens = [r["tokens"] for r in measured]
        for axis, key in zip(axes, ("prefill_s", "decode_ms_per_token", "peak_rss_MB")):
            axis.plot(tokens, [r[key] for r in measured], marker="o", label=side)
    for axis, title in zip(axes, ("prefill (s)", "decode (ms per token)", "peak RSS (MB)")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("tokens of context")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    axes[0].legend()
    figure.suptitle("SmolLM2-135M shape, CPU: the engine with full recording against transformers")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="512,1024,2048,4096,8000")
    parser.add_argument("--steps", type=int, default=8, help="decoding steps after the prefill")
    parser.add_argument("--sides", default=",".join(SIDES), help=f"which of {', '.join(SIDES)} to run")
    parser.add_argument("--record-dtype", default="float32", choices=("float32", "float16"))
    parser.add_argument("--eager-budget-gb", type=float, default=6.0,
                        help="run transformers eager only where its output attentions fit in this many GB")
    parser.add_argument("--threads", type=int, default=0, help="torch threads in each process (default: torch's)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--plot", help="draw prefill, decode and peak RSS against tokens into this PNG")
    parser.add_argument("--from-json", help="plot rows written earlier instead of measuring")
    parser.add_argument("--one", choices=SIDES, help=argparse.SUPPRESS)    # the child: one side, one length
    args = parser.parse_args()
    if args.one:
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        print(json.dumps(measure_one(args.one, int(args.tokens), args.steps, args.record_dtype)))
        return
    rows = json.loads(Path(args.from_json).read_text()) if args.from_json else run_all(args)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
