"""Trace memory at 1,024 tokens (issue 2: under 400 MB for SmolLM2-135M in float16), as one JSON object.

    .venv/bin/python bench/bench_trace_memory.py [--model smollm2-135m] [--prompt-tokens 1000] [--steps 24]

A prompt of --prompt-tokens tokens, then --steps decoding steps, recorded in float16 as the
engine does by default ("default": a prompt under 1,024 tokens stores its maps, packed; the head
outputs A V and Q, K before RoPE are derived on demand), with the prefill's maps rebuilt on demand
whatever its length ("on_demand"), and with everything stored ("stored_all"). Bytes are Trace.nbytes(), the arrays the
trace holds; without --model the SmolLM2-135M shape is built with random weights (same sizes).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from explorer.tools.bench_cmd import prompt_ids  # noqa: E402

MB, MIB = 1e6, 2 ** 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model folder, .gguf or catalog name (default: SmolLM2-135M shape)")
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=24)
    args = parser.parse_args()
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors, load_model

    if args.model:
        from explorer.core.store import resolve

        loaded = load_model(resolve(args.model))
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_engine import SMOLLM2_135M, random_checkpoint

        loaded = from_tensors(SMOLLM2_135M, random_checkpoint(SMOLLM2_135M).state_dict(),
                              name="SmolLM2-135M (random weights)")
    ids = prompt_ids(loaded, args.prompt_tokens)
    result = {"model": loaded.name, "tokens": args.prompt_tokens + args.steps, "record_dtype": "float16"}
    from explorer.core import recording

    default_from = recording.ON_DEMAND_FROM
    for name, options, on_demand_from in (
            ("default", RecordOptions(dtype="float16"), default_from),
            ("on_demand", RecordOptions(dtype="float16"), 0),
            ("stored_all", RecordOptions(dtype="float16", head_out=True, pre_rope=True, attention="stored"), 0)):
        recording.ON_DEMAND_FROM = on_demand_from
        decoder = Decoder(loaded, options, capacity=args.prompt_tokens + args.steps)
        decoder.prefill(ids)
        for _ in range(args.steps):
            decoder.step()
        held = decoder.trace.nbytes()
        attention = sum(getattr(layer.attn.weights_packed, "nbytes", 0)      # None: rebuilt on demand
                        for step in decoder.trace.steps for layer in step.layers)
        result[name] = {"trace_MB": round(held / MB, 1), "trace_MiB": round(held / MIB, 1),
                        "attention_weights_MB": round(attention / MB, 1)}
        del decoder
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
