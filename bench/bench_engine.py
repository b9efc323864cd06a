"""Our engine (full recording) against transformers on the same weights, each side timed alone.

    .venv/bin/python bench/bench_engine.py [--model PATH] [--prompt-tokens 256] [--blocks 6] [--block-steps 16]

Without --model it builds SmolLM2-135M's architecture with seeded random
weights (speed does not depend on the values). Targets (issue 16): decode
<= 0.8x transformers' cached decode per token, prefill <= 1.0x its forward.

Each side runs alone in its own block of steps, then the other side runs its
block, and the order of the sides alternates from block to block (ABBA...).
Every figure is the median of one side's own step times; the ratio is the ratio
of the medians. Pairing single steps (the earlier harness) put each side's
allocations and caches between the other's, and measured transformers 10-20 %
slower than it runs alone. The load average before and after is reported, since
on a shared machine it says how far to trust the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from explorer.tools.bench_cmd import prompt_ids  # noqa: E402

SMOLLM2_135M = dict(
    model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=49152, hidden_size=576,
    intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
    max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
    hidden_act="silu", bos_token_id=0, eos_token_id=0)


def random_tensors(hf_config: dict, seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded random weights N(0, 0.05^2) for every parameter of `hf_config`'s model (norms at 1)."""
    import transformers

    config = transformers.AutoConfig.for_model(**hf_config)
    with torch.device("meta"):
        shapes = transformers.AutoModelForCausalLM.from_config(config).state_dict()
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, like in shapes.items():
        if "norm" in name:
            tensors[name] = torch.ones(like.shape)
        elif not (config.tie_word_embeddings and name == "lm_head.weight"):
            tensors[name] = 0.05 * torch.randn(like.shape, generator=generator)
    return tensors


def random_checkpoint(hf_config: dict):
    """transformers' model of `hf_config` with seeded random weights (eager attention)."""
    return built_reference(hf_config, random_tensors(hf_config))


def built_reference(hf_config: dict, tensors: dict, attention: str = "eager"):
    """transformers' own model for `hf_config` and `attention` ("eager" | "sdpa"), holding `tensors`
    (assigned, not copied: several references share one set of weights)."""
    import transformers

    config = transformers.AutoConfig.for_model(**hf_config)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attention)
    model.load_state_dict(tensors, strict=False, assign=True)
    if config.tie_word_embeddings:
        model.tie_weights()
    return model.requires_grad_(False).eval()


class Reference:
    """transformers' model on the same weights: a forward over the prompt, and cached decoding."""

    def __init__(self, model, ids: torch.Tensor, attentions: bool = False):
        self.model, self.ids, self.attentions = model, ids, attentions
        self.cache = self.token = None

    @torch.inference_mode()
    def prefill(self) -> None:
        self.model(self.ids, output_attentions=self.attentions, use_cache=False)

    @torch.inference_mode()
    def start_decoding(self) -> None:
        out = self.model(self.ids, use_cache=True)
        self.cache, self.token = out.past_key_values, out.logits[:, -1:].argmax(-1)

    @torch.inference_mode()
    def step(self) -> None:
        out = self.model(self.token, past_key_values=self.cache, use_cache=True)
        self.cache, self.token = out.past_key_values, out.logits[:, -1:].argmax(-1)


def timed(call) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000.0


def alternating_blocks(sides: dict, blocks: int, block_steps: int) -> dict[str, list[float]]:
    """Per side, the times (ms) of `blocks` * `block_steps` calls: each block runs one side alone,
    and the sides' order turns around every round (A B, B A, A B, ...)."""
    times = {name: [] for name in sides}
    order = list(sides)
    for round_index in range(blocks):
        for name in (order if round_index % 2 == 0 else order[::-1]):
            times[name].extend(timed(sides[name]) for _ in range(block_steps))
    return times


def summary(times: dict[str, list[float]], engine: str = "engine") -> dict:
    """Median ms of each side, and the engine's median over each other side's."""
    medians = {name: statistics.median(values) for name, values in times.items()}
    out = {f"{name}_ms": round(ms, 3) for name, ms in medians.items()}
    for name, ms in medians.items():
        if name != engine:
            out[f"ratio_vs_{name}"] = round(medians[engine] / ms, 3)
    out["samples_per_side"] = len(times[engine])
    return out


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def open_model(model_arg: str | None):
    """(hf_config, tensors, name, tokenizer) of --model, or the SmolLM2-135M shape with random weights."""
    if model_arg:
        from explorer.core.loaders import open_checkpoint
        from explorer.core.store import resolve

        checkpoint = open_checkpoint(resolve(model_arg))
        return checkpoint.hf_config, checkpoint.tensors, checkpoint.name, checkpoint.tokenizer
    return SMOLLM2_135M, random_tensors(SMOLLM2_135M), "SmolLM2-135M (random weights)", None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model folder or .gguf (default: SmolLM2-135M shape, random weights)")
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--blocks", type=int, default=6, help="rounds of blocks (each side once per round)")
    parser.add_argument("--block-steps", type=int, default=16, help="decoding steps per block")
    parser.add_argument("--prefill-block", type=int, default=2, help="prefills per block")
    parser.add_argument("--record-dtype", default="float32", choices=("float32", "float16"))
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors

    hf_config, tensors, name, tokenizer = open_model(args.model)
    loaded = from_tensors(hf_config, tensors, name=name, tokenizer=tokenizer)
    ids = prompt_ids(loaded, args.prompt_tokens)
    ids_t = torch.as_tensor(ids)[None]
    sdpa = Reference(built_reference(hf_config, tensors, "sdpa"), ids_t)
    eager = Reference(built_reference(hf_config, tensors, "eager"), ids_t, attentions=True)
    steps = args.blocks * args.block_steps
    decoder = Decoder(loaded, RecordOptions(dtype=args.record_dtype), capacity=args.prompt_tokens + steps + 2)
    before = load_average()

    decoder.prefill(ids[:16]), decoder.step(), sdpa.prefill(), eager.prefill()            # warm up every side
    prefill = summary(alternating_blocks(
        {"engine": lambda: decoder.prefill(ids), "transformers_sdpa": sdpa.prefill,
         "transformers_eager_attentions": eager.prefill}, args.blocks, args.prefill_block))
    decoder.prefill(ids)
    sdpa.start_decoding()
    decode = summary(alternating_blocks({"engine": decoder.step, "transformers_sdpa": sdpa.step},
                                        args.blocks, args.block_steps))
    print(json.dumps({
        "model": name, "threads": torch.get_num_threads(), "prompt_tokens": args.prompt_tokens,
        "blocks": args.blocks, "block_steps": args.block_steps, "record_dtype": args.record_dtype,
        "prefill": prefill, "decode_per_token": decode, "trace_bytes": int(decoder.trace.nbytes()),
        "load_average_before": before, "load_average_after": load_average(),
    }, indent=1))


if __name__ == "__main__":
    main()
