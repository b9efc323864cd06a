"""Our engine (full recording) against transformers on the same weights, in one process.

    .venv/bin/python bench/bench_engine.py [--model PATH] [--prompt-tokens 256] [--steps 64]

Without --model it builds SmolLM2-135M's architecture with seeded random
weights (speed does not depend on the values). Targets (issue 2): decode
<= 0.8x transformers' cached decode per token, prefill <= 1.0x its forward
with output_attentions=True (eager attention). Prints one JSON object.

The two run alternately (one prefill or one decoding step of each in turn), and each
ratio is the median of the per-pair ratios, so a busy moment of a shared machine
slows both sides of a pair instead of one whole run.
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

from explorer.tools.bench_cmd import prompt_ids  # noqa: E402

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


class Reference:
    """transformers' model on the same weights: an eager forward with attentions, and cached decoding."""

    def __init__(self, model, ids: torch.Tensor):
        self.model, self.ids = model, ids
        self.cache = self.token = None

    @torch.inference_mode()
    def prefill(self) -> None:
        self.model(self.ids, output_attentions=True)

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


def paired(ours, theirs, rounds: int) -> tuple[list[float], list[float]]:
    """Time `ours` and `theirs` alternately, so that a busy moment of a shared machine hits both."""
    mine, reference = [], []
    for _ in range(rounds):
        mine.append(timed(ours))
        reference.append(timed(theirs))
    return mine, reference


def summary(mine: list[float], reference: list[float]) -> dict:
    ratios = [a / b for a, b in zip(mine, reference)]
    return {"engine_ms": round(statistics.median(mine), 3), "transformers_ms": round(statistics.median(reference), 3),
            "ratio": round(statistics.median(ratios), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model folder or .gguf (default: SmolLM2-135M shape, random weights)")
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--prefills", type=int, default=9, help="paired prefill runs")
    parser.add_argument("--record-dtype", default="float32", choices=("float32", "float16"))
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors

    if args.model:
        from explorer.core.loaders import open_checkpoint
        from explorer.core.store import resolve

        checkpoint = open_checkpoint(resolve(args.model))
        hf_config, tensors, name, tokenizer = checkpoint.hf_config, checkpoint.tensors, checkpoint.name, checkpoint.tokenizer
        model = reference_model(hf_config, tensors)
    else:
        hf_config, name, tokenizer = SMOLLM2_135M, "SmolLM2-135M (random weights)", None
        model = random_checkpoint(hf_config)
        tensors = model.state_dict()
    loaded = from_tensors(hf_config, tensors, name=name, tokenizer=tokenizer)
    ids = prompt_ids(loaded, args.prompt_tokens)
    reference = Reference(model, torch.as_tensor(ids)[None])
    decoder = Decoder(loaded, RecordOptions(dtype=args.record_dtype), capacity=args.prompt_tokens + args.steps)

    decoder.prefill(ids[:16]), decoder.step(), reference.prefill()                 # warm up both
    prefill = summary(*paired(lambda: decoder.prefill(ids), reference.prefill, args.prefills))
    decoder.prefill(ids)
    reference.start_decoding()
    decode = summary(*paired(decoder.step, reference.step, args.steps))
    print(json.dumps({
        "model": name, "threads": torch.get_num_threads(), "prompt_tokens": args.prompt_tokens, "steps": args.steps,
        "record_dtype": args.record_dtype, "prefill": prefill, "decode_per_token": decode,
        "trace_bytes": int(decoder.trace.nbytes()),
    }, indent=1))


if __name__ == "__main__":
    main()
