"""Our engine (full recording) against transformers on the same weights, in one process.

    .venv/bin/python bench/bench_engine.py [--model PATH] [--prompt-tokens 256] [--steps 64]

Without --model it builds SmolLM2-135M's architecture with seeded random
weights (speed does not depend on the values). Targets (issue 2): decode
<= 0.8x transformers' cached decode per token, prefill <= 1.0x its forward
with output_attentions=True (eager attention). Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from explorer.tools.bench_cmd import prompt_ids, time_engine  # noqa: E402

SMOLLM2_135M = dict(
    model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=49152, hidden_size=576,
    intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
    max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
    hidden_act="silu", bos_token_id=0, eos_token_id=0)


def reference_model(hf_config: dict, tensors: dict):
    import transformers

    config = transformers.AutoConfig.for_model(**hf_config)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    model.load_state_dict(tensors, strict=False)
    if config.tie_word_embeddings:
        model.tie_weights()
    return model.eval()


def random_checkpoint(hf_config: dict):
    model = reference_model(hf_config, {})
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(0.05 * torch.randn(parameter.shape, generator=generator))
    return model


@torch.inference_mode()
def time_transformers(model, ids: torch.Tensor, steps: int) -> dict:
    model(ids[:, :16], output_attentions=True)                        # warm up
    start = time.perf_counter()
    model(ids, output_attentions=True)
    prefill_ms = (time.perf_counter() - start) * 1000.0
    out = model(ids, use_cache=True)
    cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
    per_token = []
    for _ in range(steps):
        start = time.perf_counter()
        out = model(token, past_key_values=cache, use_cache=True)
        cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        per_token.append((time.perf_counter() - start) * 1000.0)
    return {"prefill_ms": round(prefill_ms, 3), "decode_ms_per_token": round(statistics.median(per_token), 3)}


def best(runs: list[dict]) -> dict:
    return {key: min(run[key] for run in runs) if key != "trace_bytes" else runs[-1][key] for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model folder or .gguf (default: SmolLM2-135M shape, random weights)")
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="interleaved runs of each; the best is kept")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from explorer.core.runtime import from_tensors

    if args.model:
        from explorer.core.loaders import open_checkpoint
        from explorer.core.store import resolve

        checkpoint = open_checkpoint(resolve(args.model))
        hf_config, tensors, name, tokenizer = checkpoint.hf_config, checkpoint.tensors, checkpoint.name, checkpoint.tokenizer
        reference = reference_model(hf_config, tensors)
    else:
        hf_config, name, tokenizer = SMOLLM2_135M, "SmolLM2-135M (random weights)", None
        reference = random_checkpoint(hf_config)
        tensors = reference.state_dict()
    loaded = from_tensors(hf_config, tensors, name=name, tokenizer=tokenizer)
    ids = torch.as_tensor(prompt_ids(loaded, args.prompt_tokens))[None]
    # Interleaved repeats, best of each: on a shared machine the minimum is the least disturbed run.
    runs_ours, runs_theirs = [], []
    for _ in range(args.repeats):
        runs_ours.append(time_engine(loaded, args.prompt_tokens, args.steps))
        runs_theirs.append(time_transformers(reference, ids, args.steps))
    ours, theirs = best(runs_ours), best(runs_theirs)
    print(json.dumps({
        "model": name, "threads": torch.get_num_threads(), "prompt_tokens": args.prompt_tokens, "steps": args.steps,
        "engine": ours, "transformers": theirs,
        "decode_ratio": round(ours["decode_ms_per_token"] / theirs["decode_ms_per_token"], 3),
        "prefill_ratio": round(ours["prefill_ms"] / theirs["prefill_ms"], 3),
    }, indent=1))


if __name__ == "__main__":
    main()
