"""A batch's memory: the peak a packed pass of model.run(prompts) adds, measured, against pass_budget.pass_bytes.

    .venv/bin/python bench/bench_batch_memory.py [model.gguf | folder | catalog name] [--shapes 16x64,8x256,2x1024]

Each shape (prompts x tokens) runs in a child process of its own: it loads the model, runs a small batch
once (so that the allocator's first pools and the lazily built tables are not counted), resets its peak
resident set (writing 5 to /proc/self/clear_refs), runs the batch as one packed pass (memory= large
enough), and reads VmHWM. What the pass added is VmHWM minus the resident set before it; the estimate is
pass_bytes(config, lengths, weights) as the batch budget reads it, plus the bytes of the runs' traces the
batch hands back (which the budget leaves to the caller). A benchmark, not a test: it prints the
measured and estimated MiB, their ratio and the machine's load.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MIB = 2 ** 20


def status_bytes(field: str) -> int:
    """VmHWM or VmRSS of this process, in bytes."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field + ":"))


def child(name: str, count: int, tokens: int) -> dict:
    """In a fresh process: the measured peak a batch of `count` prompts of `tokens` tokens adds, and the estimate."""
    import numpy as np
    import torch

    import explorer
    from explorer.core import pass_budget
    from explorer.core.recording import rebuilds

    torch.set_num_threads(1)
    model = explorer.load(name)
    rng = np.random.default_rng(0)
    vocab = model.info.vocab_size
    prompts = [rng.integers(10, vocab, tokens).tolist() for _ in range(count)]
    model.run([p[:8] for p in prompts[:2]])                                    # warm: pools, rotary tables
    lengths = [tokens] * count
    stored = not rebuilds(tokens, tokens, own_keys=True)
    estimate = pass_budget.pass_bytes(model.loaded.config, lengths, stored)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")                                                       # VmHWM := VmRSS from here
    before = status_bytes("VmRSS")
    runs = model.run(prompts, memory=1 << 40)
    peak = status_bytes("VmHWM") - before
    traces = sum(run.trace.nbytes() for run in runs)
    return {"shape": f"{count}x{tokens}", "peak": peak, "pass_bytes": estimate, "traces": traces}


def load_average() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def main(argv: list[str]) -> None:
    name = next((a for a in argv if not a.startswith("--")), "smollm2-135m")
    shapes = next((a.split("=", 1)[1] for a in argv if a.startswith("--shapes=")), "16x64,8x256,2x1024")
    print(f"load average before: {load_average()}")
    print(f"{'shape':>8} {'measured MiB':>13} {'pass_bytes MiB':>15} {'+ traces MiB':>13} {'measured / estimate':>20}")
    for shape in shapes.split(","):
        count, tokens = (int(part) for part in shape.split("x"))
        out = subprocess.run([sys.executable, __file__, "--child", name, str(count), str(tokens)],
                             capture_output=True, text=True, check=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        estimate = row["pass_bytes"] + row["traces"]
        print(f"{row['shape']:>8} {row['peak'] / MIB:13.1f} {row['pass_bytes'] / MIB:15.1f} "
              f"{estimate / MIB:13.1f} {row['peak'] / estimate:20.2f}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    else:
        main(sys.argv[1:])
