"""Trace memory: the bytes a trace's arrays hold, by part, and the peak RSS of the process that recorded it.

    .venv/bin/python bench/bench_trace_memory.py [--model smollm2-135m] [--prompt-tokens 1000] [--steps 24]
        [--dtype float16] [--modes default,on_demand,stored_all]

    # the 8,000-token trace (goal: within 1.2 GB), float32 records as the app and the API keep them
    .venv/bin/python bench/bench_trace_memory.py \
        --model .cache/test-models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf \
        --prompt-tokens 8000 --steps 0 --dtype float32 --modes default

A prompt of --prompt-tokens tokens, then --steps decoding steps, recorded in --dtype, in each mode:
"default" as the engine records (a prompt under 1,024 tokens stores its maps, packed, and its block
inputs X; a longer one keeps Q, K and V only and rebuilds the maps and X on demand; the head outputs A V
and Q, K before RoPE are derived), "on_demand" with the prefill's maps rebuilt on demand whatever its
length, and "stored_all" with everything stored. Each mode runs in a child process of its own, so that its
peak RSS is its own: VmHWM of /proc/self/status, read by the child (ru_maxrss would carry the parent's
peak across exec). Bytes are Trace.nbytes(), split by the field that holds them; without --model the
SmolLM2-135M shape is built with random weights (same sizes). The load average is printed with the figures.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MB, MIB = 1e6, 2 ** 20
MODES = ("default", "on_demand", "stored_all")


def peak_rss_bytes() -> int:
    """This process's own peak resident set (VmHWM), in bytes."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))


def load_average() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def parts(trace) -> dict[str, int]:
    """Trace.nbytes() split by the field holding the bytes ("layer.x", "attn.q", "step.embeddings", ...);
    an array shared by several records counts once, as in Trace.nbytes."""
    from explorer.core.trace import nbytes_of

    seen: set = set()
    out: dict[str, int] = {}

    def add(prefix: str, record, skip=()) -> None:
        for name in record.__dataclass_fields__:
            if name not in skip and not name.startswith("_"):
                out[f"{prefix}.{name}"] = out.get(f"{prefix}.{name}", 0) + nbytes_of(getattr(record, name), seen)

    for step in trace.steps + ((trace.encoder,) if trace.encoder else ()):
        add("step", step, skip=("layers",))
        for layer in step.layers:
            add("layer", layer, skip=("attn", "cross"))
            for attn in (layer.attn, layer.cross):
                if attn is not None:
                    add("attn", attn)
    return {name: held for name, held in sorted(out.items()) if held}


def record_one(args, mode: str) -> dict:
    """Record the prompt and steps in `mode` in this process: the trace's bytes, by part, and the peak RSS."""
    from explorer.core import recording
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors, load_model
    from explorer.tools.bench_cmd import prompt_ids

    if args.model:
        from explorer.core.store import resolve

        loaded = load_model(resolve(args.model))
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_engine import SMOLLM2_135M, random_checkpoint

        loaded = from_tensors(SMOLLM2_135M, random_checkpoint(SMOLLM2_135M).state_dict(),
                              name="SmolLM2-135M (random weights)")
    ids = prompt_ids(loaded, args.prompt_tokens)
    options = {"default": RecordOptions(dtype=args.dtype), "on_demand": RecordOptions(dtype=args.dtype),
               "stored_all": RecordOptions(dtype=args.dtype, head_out=True, pre_rope=True, attention="stored")}[mode]
    if mode != "default":
        recording.ON_DEMAND_FROM = 0
    loaded_rss = peak_rss_bytes()
    decoder = Decoder(loaded, options, capacity=args.prompt_tokens + args.steps)
    decoder.prefill(ids)
    for _ in range(args.steps):
        decoder.step()
    held = decoder.trace.nbytes()
    split = parts(decoder.trace)
    return {"model": loaded.name, "trace_MB": round(held / MB, 1), "trace_MiB": round(held / MIB, 1),
            "trace_bytes": held, "attention_weights_MB": round(split.get("attn.weights_packed", 0) / MB, 1),
            "parts_MB": {name: round(b / MB, 2) for name, b in split.items()},
            "peak_rss_GB": round(peak_rss_bytes() / 1e9, 2), "peak_rss_after_load_GB": round(loaded_rss / 1e9, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model folder, .gguf or catalog name (default: SmolLM2-135M shape)")
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--dtype", default="float16", choices=("float16", "float32"))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)      # the child's mode
    args = parser.parse_args()
    if args.one:
        print(json.dumps(record_one(args, args.one)))
        return
    result = {"tokens": args.prompt_tokens + args.steps, "record_dtype": args.dtype, "load_before": load_average()}
    for mode in args.modes.split(","):
        if mode not in MODES:
            parser.error(f"mode {mode!r} is not one of {', '.join(MODES)}")
        child = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--one", mode],
                               check=True, capture_output=True, text=True)
        result[mode] = json.loads(child.stdout.strip().splitlines()[-1])
    result["load_after"] = load_average()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
