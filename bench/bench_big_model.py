"""A Llama-3.2-1B-shaped checkpoint: load time, decode ms per token with recording, peak memory.

    .venv/bin/python bench/bench_big_model.py [--dtype float32|bfloat16] [--steps 8] [--prompt-tokens 32]

The benchmark writes the checkpoint itself (16 layers, d = 2048, 32 query / 8 K/V heads,
d_ff = 8192, a 128,256-token vocabulary: 1.24 B parameters) with seeded random weights
as sharded safetensors in a temporary folder, in the dtype asked for. A fresh process
then loads it with load_model and decodes with full recording, so that its peak RSS
is its own. The weights are memory-mapped: RssFile is the mapped checkpoint, RssAnon
what the process allocated besides. A loader that copied the weights would show them
twice, once in each.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LLAMA_3_2_1B = dict(
    model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=128256, hidden_size=2048,
    intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
    head_dim=64, max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
    tie_word_embeddings=True, hidden_act="silu", bos_token_id=128000, eos_token_id=128001,
    rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                  "original_max_position_embeddings": 8192, "rope_type": "llama3"})
LAYERS_PER_SHARD = 4


def memory() -> dict[str, int]:
    """This process's VmHWM (peak RSS), VmRSS, RssAnon and RssFile in MB, from /proc/self/status."""
    out = {}
    with open("/proc/self/status") as status:
        for line in status:
            name = line.split(":")[0]
            if name in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[name + "_MB"] = int(line.split()[1]) // 1024
    return out


def layer_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """HF names and shapes of one Llama layer's weights ({i} = the layer)."""
    d, f = config["hidden_size"], config["intermediate_size"]
    head = config["head_dim"]
    q, kv = config["num_attention_heads"] * head, config["num_key_value_heads"] * head
    prefix = "model.layers.{i}."
    return {prefix + "self_attn.q_proj.weight": (q, d), prefix + "self_attn.k_proj.weight": (kv, d),
            prefix + "self_attn.v_proj.weight": (kv, d), prefix + "self_attn.o_proj.weight": (d, q),
            prefix + "mlp.gate_proj.weight": (f, d), prefix + "mlp.up_proj.weight": (f, d),
            prefix + "mlp.down_proj.weight": (d, f), prefix + "input_layernorm.weight": (d,),
            prefix + "post_attention_layernorm.weight": (d,)}


def write_checkpoint(folder: Path, config: dict, dtype: str, seed: int = 0) -> None:
    """config.json and seeded N(0, 0.02^2) weights (norm weights 1) as shards of LAYERS_PER_SHARD layers."""
    import torch
    from safetensors.torch import save_file

    torch_dtype = getattr(torch, dtype)
    generator = torch.Generator().manual_seed(seed)

    def random(shape):
        if len(shape) == 1:
            return torch.ones(shape, dtype=torch_dtype)
        return (0.02 * torch.randn(shape, generator=generator)).to(torch_dtype)

    shards = [{"model.embed_tokens.weight": random((config["vocab_size"], config["hidden_size"])),
               "model.norm.weight": random((config["hidden_size"],))}]
    for start in range(0, config["num_hidden_layers"], LAYERS_PER_SHARD):
        shards.append({name.format(i=i): random(shape) for i in range(start, min(start + LAYERS_PER_SHARD,
                       config["num_hidden_layers"])) for name, shape in layer_shapes(config).items()})
    weight_map = {}
    for number, shard in enumerate(shards):
        file = f"model-{number + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(folder / file))
        weight_map.update({name: file for name in shard})
        shard.clear()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    write_tokenizer(folder)
    (folder / "config.json").write_text(json.dumps({**config, "torch_dtype": dtype}))


def write_tokenizer(folder: Path) -> None:
    """A word-level tokenizer.json (the loader needs one; the benchmark feeds ids)."""
    import tokenizers
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = tokenizers.Tokenizer(WordLevel({"<unk>": 0, "the": 1, "a": 2}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))


def measure(folder: Path, dtype: str, prompt_tokens: int, steps: int) -> dict:
    """Load `folder` and decode with full recording; times and this process's memory."""
    import numpy as np
    import torch

    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import load_model

    result = {"before_load": memory()}
    start = time.perf_counter()
    loaded = load_model(folder, dtype=dtype)
    result["load_s"] = round(time.perf_counter() - start, 2)
    result["after_load"] = memory()
    ids = np.random.default_rng(0).integers(0, loaded.config.vocab_size, prompt_tokens)
    decoder = Decoder(loaded, RecordOptions(dtype="float16"), capacity=prompt_tokens + steps + 1)
    start = time.perf_counter()
    decoder.prefill(ids)
    result["prefill_s"] = round(time.perf_counter() - start, 2)
    per_token = []
    for _ in range(steps):
        start = time.perf_counter()
        decoder.step()
        per_token.append((time.perf_counter() - start) * 1000.0)
    result["decode_ms_per_token"] = round(sorted(per_token)[len(per_token) // 2], 1)
    result["decode_ms_all"] = [round(ms, 1) for ms in per_token]
    result["trace_MB"] = round(decoder.trace.nbytes() / 1e6, 1)
    result["n_params"] = loaded.info.n_params
    result["threads"] = torch.get_num_threads()
    result["after_decode"] = memory()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--folder", help="write (or reuse) the checkpoint here instead of a temporary folder")
    parser.add_argument("--measure", help=argparse.SUPPRESS)      # the child process: measure this folder
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.dtype, args.prompt_tokens, args.steps)))
        return
    with tempfile.TemporaryDirectory(prefix="llama-1b-shape-") as temporary:
        folder = Path(args.folder or temporary)
        folder.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        if not (folder / "config.json").is_file():
            write_in_child(folder, args.dtype)
        written_s = time.perf_counter() - start
        child = subprocess.run([sys.executable, __file__, "--measure", str(folder), "--dtype", args.dtype,
                                "--prompt-tokens", str(args.prompt_tokens), "--steps", str(args.steps)],
                               capture_output=True, text=True)
        if child.returncode:
            sys.exit(child.stderr)
        result = json.loads(child.stdout.strip().splitlines()[-1])
        checkpoint_bytes = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    print(json.dumps({"shape": "Llama-3.2-1B (random weights)", "dtype": args.dtype,
                      "checkpoint_GB": round(checkpoint_bytes / 1e9, 2), "write_s": round(written_s, 1),
                      "load_average": [round(x, 2) for x in os.getloadavg()], **result}, indent=1))


def write_in_child(folder: Path, dtype: str) -> None:
    """Write the checkpoint in its own process, so the writer's memory is not the measured one's."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_big_model as b; "
            f"from pathlib import Path; b.write_checkpoint(Path({str(folder)!r}), b.LLAMA_3_2_1B, {dtype!r})")
    subprocess.run([sys.executable, "-c", code], check=True)


if __name__ == "__main__":
    main()
