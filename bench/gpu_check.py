"""The CUDA and bfloat16 path on a GPU, in one run: the device picker, parity with the CPU and with transformers, and
decode speed. Prepared for a lent GPU machine; never a test (CI has no GPU). Prints one JSON object.

    python bench/gpu_check.py [--device cuda] [--steps 8] [--speed-steps 64] [--long-tokens 4096]

1. The device picker: the devices and dtypes the app's Device box offers (core_api's available_devices, the
   function the model thread answers it with) and what `auto` resolves to.
2. Parity with the CPU: each bundled model (GQA, MQA, MLA, encoder-decoder) run greedily through the API on the
   device in float32 and bfloat16 against the CPU in float32: the tokens chosen, and the largest difference of
   the prompt's logits and of every layer's attention weights A over the prompt (where the tokens part, later
   rows compare different texts).
3. Parity with transformers on the device: SmolLM2-135M's shape with seeded random weights (bench_engine), our
   engine against transformers' eager attention on the same device and dtype: logits and every A of the prompt.
4. Speed: that model's prefill and ms per decoded token (full recording) on the CPU and the device in float32 and
   bfloat16, beside transformers' own cached decode (sdpa) on the device, each side timed alone in blocks.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_engine import SMOLLM2_135M, Reference, alternating_blocks, built_reference, random_tensors, timed  # noqa: E402

import explorer  # noqa: E402

BUNDLED = ROOT / "resources" / "models"
HAMLET = "To be, or not to be, that is the question:"
PROMPTS = {"shakespeare-gqa": HAMLET, "shakespeare-mqa": HAMLET, "shakespeare-mla": HAMLET,
           "translate-en-zh": "The cat sat on the mat."}


def synced(call, device: str):
    """`call` that returns once the device has done its work (a CUDA call returns when its kernels are queued)."""
    if not device.startswith("cuda"):
        return call

    def call_and_wait():
        call()
        torch.cuda.synchronize()
    return call_and_wait


def picker() -> dict:
    from explorer.app.thread.core_api import _real_available_devices
    from explorer.core.building import resolve_device

    return {"offered": _real_available_devices(), "auto": str(resolve_device("auto")),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def attention_maps(run, n_prompt: int) -> list[np.ndarray]:
    """Every layer's A over the prompt's rows (and the cross-attention's, for an encoder-decoder)."""
    trace, maps = run.trace, []
    kinds = (False, True) if trace.model.is_encoder_decoder else (False,)
    for cross in kinds:
        for layer in range(trace.model.n_layers):
            maps.append(trace.attention(layer, upto_step=0, cross=cross)[:, :n_prompt].astype(np.float64))
    return maps


def parted_at(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first index where two id sequences differ (None: equal)."""
    n = min(len(a), len(b))
    where = np.flatnonzero(a[:n] != b[:n])
    return int(where[0]) if where.size else (None if len(a) == len(b) else n)


def parity_bundled(device: str, steps: int) -> dict:
    out = {}
    for name, prompt in PROMPTS.items():
        runs = {}
        for where, dtype in (("cpu", "float32"), (device, "float32"), (device, "bfloat16")):
            model = explorer.load(BUNDLED / name, device=where, dtype=dtype)
            runs[f"{where}-{dtype}"] = model.run(prompt, steps=steps)
        base = runs["cpu-float32"]
        n_prompt = base.trace.steps[0].n_new
        base_maps = attention_maps(base, n_prompt)
        rows = {}
        for key, run in runs.items():
            if key == "cpu-float32":
                continue
            maps = attention_maps(run, n_prompt)
            row = {"tokens_part_at": parted_at(base.ids, run.ids),
                   "max_abs_A": float(max(np.abs(a - b).max() for a, b in zip(maps, base_maps)))}
            try:
                row["max_abs_logits_prompt"] = float(np.abs(run.logits[:n_prompt] - base.logits[:n_prompt]).max())
                row["logits_scale"] = float(np.abs(base.logits[:n_prompt]).max())
            except explorer.ExplorerError as error:
                row["logits"] = str(error)
            rows[key] = row
        out[name] = {"tokens": int(len(base.ids)), **rows}
    return out


def parity_transformers(device: str, tensors: dict) -> dict:
    """Ours against transformers in each dtype, and each against transformers in float32 (in bfloat16 the two
    round differently: what says our bfloat16 path is sound is an error against float32 like transformers' own)."""
    from explorer.api import Model
    from explorer.core.runtime import from_tensors
    from explorer.tools.bench_cmd import prompt_ids

    out, exact = {}, None
    for dtype in ("float32", "bfloat16"):
        loaded = from_tensors(SMOLLM2_135M, dict(tensors), name="SmolLM2-135M (random)", device=device, dtype=dtype)
        ids = prompt_ids(loaded, 64)
        run = Model(loaded, None, device, dtype).run(ids)
        reference = built_reference(SMOLLM2_135M, {k: v.clone() for k, v in tensors.items()}, "eager")
        reference = reference.to(device=device, dtype=getattr(torch, dtype))
        with torch.inference_mode():
            result = reference(torch.as_tensor(ids, device=device)[None], output_attentions=True, use_cache=False)
        theirs = result.logits[0].float().cpu().numpy()
        ours = run.logits[:len(ids)]
        exact = theirs if exact is None else exact
        a_diff = max(float(np.abs(run.trace.attention(layer)[:, :len(ids), :len(ids)]
                                  - result.attentions[layer][0].float().cpu().numpy()).max())
                     for layer in range(loaded.info.n_layers))
        out[dtype] = {"max_abs_logits": float(np.abs(ours - theirs).max()), "logits_scale": float(np.abs(theirs).max()),
                      "argmax_equal_rows": int((ours.argmax(-1) == theirs.argmax(-1)).sum()), "rows": len(ids),
                      "max_abs_A": a_diff,
                      "ours_vs_float32_reference": float(np.abs(ours - exact).max()),
                      "transformers_vs_float32_reference": float(np.abs(theirs - exact).max()),
                      "argmax_equal_rows_to_float32": {"ours": int((ours.argmax(-1) == exact.argmax(-1)).sum()),
                                                       "transformers": int((theirs.argmax(-1) == exact.argmax(-1))
                                                                           .sum())}}
        del reference, loaded, run
    return out


def median_ms(sides: dict, blocks: int, per_block: int) -> dict[str, float]:
    """Median ms of each side's calls, each side alone in its block, the order turning every round
    (bench_engine.alternating_blocks)."""
    return {name: round(statistics.median(values), 3)
            for name, values in alternating_blocks(sides, blocks, per_block).items()}


def speed(device: str, tensors: dict, prompt_tokens: int, steps: int, long_tokens: int) -> dict:
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from explorer.tools.bench_cmd import prompt_ids

    out = {"torch_threads": torch.get_num_threads(), "prompt_tokens": prompt_tokens}
    for where, dtype in (("cpu", "float32"), (device, "float32"), (device, "bfloat16")):
        loaded = from_tensors(SMOLLM2_135M, dict(tensors), name="SmolLM2-135M (random)", device=where, dtype=dtype)
        ids = prompt_ids(loaded, prompt_tokens)
        decoder = Decoder(loaded, capacity=prompt_tokens + 4 * steps + 8)
        decoder.prefill(ids[:16]), decoder.step()                     # warm up
        synced(lambda: None, where)()
        prefill = median_ms({"engine": synced(functools.partial(decoder.prefill, ids), where)}, 2, 2)["engine"]
        decoder.prefill(ids)
        sides = {"engine": synced(decoder.step, where)}
        if where != "cpu":
            reference = built_reference(SMOLLM2_135M, {k: v.clone() for k, v in tensors.items()}, "sdpa")
            reference = Reference(reference.to(device=where, dtype=getattr(torch, dtype)),
                                  torch.as_tensor(ids, device=where)[None])
            reference.start_decoding()
            sides["transformers_sdpa"] = synced(reference.step, where)
        decode = median_ms(sides, 4, steps // 4)
        row = {"prefill_ms": prefill, "decode_ms_per_token": decode}
        if where != "cpu" and long_tokens:
            long_ids = prompt_ids(loaded, long_tokens)
            long_decoder = Decoder(loaded, capacity=long_tokens + 40)
            row[f"prefill_{long_tokens}_ms"] = round(timed(synced(functools.partial(long_decoder.prefill, long_ids),
                                                                  where)), 1)
            row[f"decode_ms_per_token_at_{long_tokens}"] = median_ms({"engine": synced(long_decoder.step, where)},
                                                                     2, 8)["engine"]
            row["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
            del long_decoder
        out[f"{where}-{dtype}"] = row
        del decoder, loaded
        if where != "cpu":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=8, help="greedy steps of each bundled model's parity run")
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--speed-steps", type=int, default=64)
    parser.add_argument("--long-tokens", type=int, default=4096, help="a long prefill on the device (0: none)")
    args = parser.parse_args()
    started = time.perf_counter()
    report = {"torch": torch.__version__, "python": sys.version.split()[0], "cpu_count": os.cpu_count(),
              "picker": picker()}
    tensors = random_tensors(SMOLLM2_135M)
    for part, call in (("parity_cpu", lambda: parity_bundled(args.device, args.steps)),
                       ("parity_transformers", lambda: parity_transformers(args.device, tensors)),
                       ("speed", lambda: speed(args.device, tensors, args.prompt_tokens, args.speed_steps,
                                               args.long_tokens))):
        try:
            report[part] = call()
        except Exception as error:  # noqa: BLE001 - one part's failure is reported, the others still run
            import traceback

            report[part] = {"error": f"{type(error).__name__}: {error}", "where": traceback.format_exc()[-2000:]}
        print(f"{part} done at {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    report["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
