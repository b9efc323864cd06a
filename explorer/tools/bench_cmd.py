"""`python -m explorer bench`: prefill and per-token decode time with full recording, as JSON.

decode_ms_per_token is the median over the steps; trace_bytes is what the
recorded trace holds at the end (float32 records).
"""
from __future__ import annotations

import json
import statistics
import time

import numpy as np

from explorer.core.errors import ContextOverflowError, ExplorerError
from explorer.core.store import resolve
from explorer.tools import arguments

PASSAGE = ("The history of the city begins with a small settlement on the river, where traders met to "
           "exchange salt, grain and cloth. Over the centuries the market grew into a town, the town into "
           "a capital, and every generation left a bridge, a church or a street behind. ")


def prompt_ids(loaded, n_tokens: int) -> np.ndarray:
    """n_tokens of ordinary text (repeated as needed), or seeded random ids without a tokenizer."""
    if loaded.tokenizer is not None:
        ids = np.asarray(loaded.tokenizer.encode(PASSAGE * 4).ids, dtype=np.int64)
        if len(ids):
            return np.resize(ids, n_tokens)
    return np.random.default_rng(0).integers(0, loaded.config.vocab_size, n_tokens).astype(np.int64)


def time_engine(loaded, prompt_tokens: int = 256, steps: int = 64, record_dtype: str = "float32") -> dict:
    """Warm up, then time one prefill and `steps` decoding steps of our Decoder with full recording."""
    from explorer.core.decode import Decoder, RecordOptions  # torch: --help imports every command module

    if prompt_tokens < 1 or steps < 1:
        raise ExplorerError("--prompt-tokens and --steps must be at least 1")
    if prompt_tokens + steps > loaded.config.max_positions:
        raise ContextOverflowError(
            f"{prompt_tokens} prompt tokens plus {steps} steps exceed the context of {loaded.config.max_positions}")
    ids = prompt_ids(loaded, prompt_tokens)
    decoder = Decoder(loaded, RecordOptions(dtype=record_dtype), capacity=prompt_tokens + steps)
    decoder.prefill(ids[: min(16, prompt_tokens)])
    for _ in range(2):
        decoder.step()
    _sync(loaded)
    start = time.perf_counter()
    decoder.prefill(ids)
    _sync(loaded)
    prefill_ms = (time.perf_counter() - start) * 1000.0
    per_token = []
    for _ in range(steps):
        start = time.perf_counter()
        decoder.step()
        _sync(loaded)
        per_token.append((time.perf_counter() - start) * 1000.0)
    return {"prefill_ms": round(prefill_ms, 3), "decode_ms_per_token": round(statistics.median(per_token), 3),
            "trace_bytes": int(decoder.trace.nbytes())}


def _sync(loaded) -> None:
    import torch  # here, not at the top: the app's start imports every subcommand module

    device = loaded.model.embed.weight.device
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="model folder, .gguf file or catalog name")
    parser.add_argument("--prompt-tokens", type=arguments.count(1), default=256)
    parser.add_argument("--steps", type=arguments.count(1), default=64)      # a median of no step is none
    parser.add_argument("--device", type=arguments.device, default="cpu")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--json", action="store_true", help="print one JSON object (the only output format)")


def run(args) -> int:
    from explorer.core.runtime import load_model  # torch: --help imports every command module

    loaded = load_model(resolve(args.model), device=args.device, dtype=args.dtype)
    print(json.dumps(time_engine(loaded, args.prompt_tokens, args.steps)))
    return 0
