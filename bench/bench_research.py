"""The indirect-object walkthrough's steps on 8 prompts: the explorer against transformers batched with hooks.

    python bench/bench_research.py [model.gguf | folder | catalog name] [--repeat N] [--block N] [--threads N]

(--help lists the options; each one's default may be set by its BENCH_* variable instead.) Both sides are
given the same token ids (the prompts are encoded once, outside the timing). The explorer's runs record
only their logits (record="logits") and read each difference with Run.logit_diff (the last position's final
state against two rows of W_U); transformers computes every position's logits, as a hooked model does, except
in the "last row" line (logits_to_keep=1: the last position's logits over the vocabulary) and the "two rows"
line (its base model's last final states against W_U[target] - W_U[against], as the explorer does). Each step
is timed alone on each side, in blocks of --block calls (default 1; their mean), the sides' blocks taking turns
(best of --repeat blocks each, default 3), with --threads torch threads (default 1, so that a shared machine's
other jobs take less from either side); transformers loads the explorer's own save_hf folder, so both run the
same float32 weights. The "unequal lengths" lines take the 8
prompts behind openings of 4 lengths (runs of 2 prompts of one length): the explorer packs them side by side
(its attention in runs of causal squares, packed.py), transformers pads them on the right with an attention
mask and reads each prompt's last real row. A benchmark, not a test: it prints
a table (wall-clock and process CPU seconds, explorer ÷ transformers) and the machine's load
(/proc/loadavg) before and after.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import torch
import transformers

import explorer

REPEAT = 3      # blocks per side, the best kept (--repeat)
BLOCK = 1       # calls in a row per timed block, their mean (--block)
FORMATS = ["When John and Mary went to the shops,{} gave the bag to",
           "When Tom and James went to the park,{} gave the ball to",
           "When Dan and Sid went to the shops,{} gave an apple to",
           "After Martin and Amy went to the park,{} gave a drink to"]
NAMES = [(" Mary", " John"), (" Tom", " James"), (" Dan", " Sid"), (" Martin", " Amy")]
OPENINGS = ["", "Then, ", "Later that day, ", "On a cold and rainy Sunday afternoon in the town, "]   # unequal


def seconds(step) -> tuple[float, float]:
    """The wall-clock and the process CPU seconds of one call (with one torch thread the CPU time is the
    work done, whatever else the machine runs; the wall clock also counts the waits for a core)."""
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - wall, time.process_time() - cpu


def block(step) -> tuple[float, float]:
    """The mean (wall, CPU) seconds of one call over a block of BLOCK calls in a row."""
    times = [seconds(step) for _ in range(BLOCK)]
    return tuple(sum(t[kind] for t in times) / BLOCK for kind in (0, 1))


def best_alternating(ours, theirs) -> tuple[tuple[float, float], tuple[float, float]]:
    """The best of REPEAT blocks (wall, CPU) of each side, the sides' blocks taking turns (ours, theirs, ours,
    ...), so that a shared machine's load in any one stretch weighs on both alike."""
    times = [(block(ours), block(theirs)) for _ in range(REPEAT)]
    return tuple(tuple(min(t[side][kind] for t in times) for kind in (0, 1)) for side in (0, 1))


def prompts_and_answers():
    prompts, answers, wrongs = [], [], []
    for text, (a, b) in zip(FORMATS, NAMES):
        prompts += [text.format(b), text.format(a)]
        answers += [a, b]
        wrongs += [b, a]
    return prompts, answers, wrongs


def hf_side(hf, batch: torch.Tensor, target: torch.Tensor, against: torch.Tensor, layer: int, head: int):
    """transformers' versions of the steps: forward, attribution by hooks, ablation, a head patching map."""
    o_projs = [block.self_attn.o_proj for block in hf.model.layers]
    n_heads = hf.config.num_attention_heads
    d_v = hf.config.hidden_size // n_heads
    rows = torch.arange(len(batch))

    def logit_diff(keep: int = 0):
        with torch.inference_mode():
            logits = hf(batch, logits_to_keep=keep).logits[:, -1]     # keep 0: every position's, as a hooked model
        return logits[rows, target] - logits[rows, against]

    def two_rows():
        with torch.inference_mode():
            h = hf.model(batch).last_hidden_state[:, -1]             # (B, d) final-normed, no product with W_U
            unembed = hf.lm_head.weight
            return (h * (unembed[target] - unembed[against])).sum(-1)

    def attribution():
        kept, final = [], []
        handles = [p.register_forward_pre_hook(lambda m, a: kept.append(a[0][:, -1])) for p in o_projs]
        handles.append(hf.model.norm.register_forward_pre_hook(lambda m, a: final.append(a[0][:, -1])))
        with torch.inference_mode():
            hf(batch)
            h = final[0]
            u = (hf.lm_head.weight[target] - hf.lm_head.weight[against]) * hf.model.norm.weight
            u = u / torch.sqrt((h * h).mean(-1, keepdim=True) + hf.model.norm.variance_epsilon)     # (B, d)
            parts = [torch.einsum("bhv,dhv,bd->bh", z.view(len(batch), n_heads, d_v),
                                  p.weight.view(-1, n_heads, d_v), u) for z, p in zip(kept, o_projs)]
        for handle in handles:
            handle.remove()
        return torch.stack(parts, 1)

    def ablation():
        def hook(module, args):
            x = args[0].clone()
            x[:, -1, head * d_v:(head + 1) * d_v] = 0.0
            return (x,)
        handle = o_projs[layer].register_forward_pre_hook(hook)
        out = logit_diff()
        handle.remove()
        return out

    def patching():
        clean_heads = []
        handles = [p.register_forward_pre_hook(lambda m, a: clean_heads.append(a[0][:1].clone())) for p in o_projs]
        with torch.inference_mode():
            hf(batch[:1])
        for handle in handles:
            handle.remove()
        values = torch.zeros(len(o_projs), n_heads)
        corrupt = batch[1:2].repeat(n_heads, 1)
        for li, proj in enumerate(o_projs):
            def hook(module, args, li=li):
                x = args[0].clone()
                for h in range(n_heads):
                    x[h, :, h * d_v:(h + 1) * d_v] = clean_heads[li][0, :, h * d_v:(h + 1) * d_v]
                return (x,)
            handle = proj.register_forward_pre_hook(hook)
            with torch.inference_mode():
                logits = hf(corrupt).logits[:, -1]
            handle.remove()
            values[li] = logits[:, target[0]] - logits[:, against[0]]
        return values

    return {"logit difference": logit_diff, "logit difference, last row": lambda: logit_diff(1),
            "logit difference, two rows": two_rows,
            "attribution": attribution, "ablation at one position": ablation, "head patching map": patching}


def hf_unequal_side(hf, ids: list[np.ndarray], target: torch.Tensor, against: torch.Tensor, layer: int, head: int,
                    positions: list[int]):
    """transformers' steps over prompts of several lengths, right-padded with an attention mask: the logit
    difference at each prompt's last real row, and under head `head` of `layer` zeroed at `positions`."""
    lengths = torch.tensor([len(one) for one in ids])
    batch = torch.zeros(len(ids), int(lengths.max()), dtype=torch.long)
    for row, one in enumerate(ids):
        batch[row, : len(one)] = torch.as_tensor(one)
    mask = (torch.arange(batch.shape[1])[None] < lengths[:, None]).long()       # (B, T): 0 at the padding
    rows, last = torch.arange(len(ids)), lengths - 1
    proj = hf.model.layers[layer].self_attn.o_proj
    d_v = hf.config.hidden_size // hf.config.num_attention_heads

    def logit_diff():
        with torch.inference_mode():
            logits = hf(batch, attention_mask=mask).logits[rows, last]          # every position's, as a hooked model
        return logits[rows, target] - logits[rows, against]

    def ablation():
        def hook(module, args):
            x = args[0].clone()
            x[:, positions, head * d_v:(head + 1) * d_v] = 0.0
            return (x,)
        handle = proj.register_forward_pre_hook(hook)
        out = logit_diff()
        handle.remove()
        return out

    return {"unequal lengths: logit difference": logit_diff, "unequal lengths: ablation": ablation}


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, where the system tells them."""
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "unknown"


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; each option's default is its BENCH_* variable's value where one is set."""

    def default(name: str, value: int) -> int:
        text = os.environ.get(name, str(value))
        try:
            number = int(text)
        except ValueError:
            parser.error(f"{name}={text!r} must be a whole number")
        if number < 1:
            parser.error(f"{name}={text!r} must be 1 or more")
        return number

    def count(text: str) -> int:
        if not text.isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"{text!r} must be a whole number, 1 or more")
        return int(text)

    parser = argparse.ArgumentParser(
        description="The indirect-object walkthrough's steps on 8 prompts: the explorer against transformers "
                    "batched with hooks, each step timed alone on each side (wall-clock and process CPU seconds, "
                    "explorer / transformers). A benchmark, not a test.")
    parser.add_argument("model", nargs="?", default="smollm2-135m",
                        help="a model file (.gguf), a folder or a catalog name (default: smollm2-135m)")
    parser.add_argument("--repeat", type=count, default=default("BENCH_REPEAT", REPEAT), metavar="N",
                        help="timed blocks per side, the sides taking turns, the best kept "
                             f"(default: $BENCH_REPEAT or {REPEAT})")
    parser.add_argument("--block", type=count, default=default("BENCH_BLOCK", BLOCK), metavar="N",
                        help=f"calls in a row per timed block, their mean (default: $BENCH_BLOCK or {BLOCK})")
    parser.add_argument("--threads", type=count, default=default("BENCH_THREADS", 1), metavar="N",
                        help="torch threads, the same for both sides; 1 keeps a shared machine's other jobs "
                             "from weighing on one side more (default: $BENCH_THREADS or 1)")
    return parser.parse_args(argv)


def main(name: str, threads: int) -> None:
    torch.set_grad_enabled(False)
    torch.set_num_threads(threads)
    print(f"load average before: {load_average()}")
    model = explorer.load(name)
    prompts, answers, wrongs = prompts_and_answers()
    with tempfile.TemporaryDirectory() as folder:           # the weights are read in; the copy goes
        hf = transformers.AutoModelForCausalLM.from_pretrained(model.save_hf(folder), dtype=torch.float32).eval()
    batch = torch.as_tensor(np.stack([model.encode(p) for p in prompts]))
    target = torch.tensor([model.to_single_token(a) for a in answers])
    against = torch.tensor([model.to_single_token(w) for w in wrongs])
    parts = model.attribute(prompts, target=answers, against=wrongs)
    layer, head = np.unravel_index(np.argmax(np.abs(np.mean([p.heads for p in parts], 0))), parts[0].heads.shape)
    last = batch.shape[1] - 1
    ablated = explorer.Intervention().ablate(int(layer), int(head), positions=[last])
    ids, targets, againsts = list(batch.numpy()), target.tolist(), against.tolist()   # as transformers is given
    def differences(prompts, intervention=None):       # record="logits": the runs keep no layers; logit_diff
        runs = model.run(prompts, intervention=intervention, record="logits")      # reads two rows of W_U
        return [r.logit_diff(t, a) for r, t, a in zip(runs, targets, againsts)]

    ours = {
        "logit difference": lambda: differences(ids),
        "logit difference, last row": lambda: differences(ids),
        "logit difference, two rows": lambda: differences(ids),
        "attribution": lambda: model.attribute(ids, target=targets, against=againsts),
        "ablation at one position": lambda: differences(ids, ablated),
        "head patching map": lambda: model.patch(ids[0], ids[1], targets[0], againsts[0]),
    }
    theirs = hf_side(hf, batch, target, against, int(layer), int(head))
    unequal = [model.encode(OPENINGS[i // 2] + p) for i, p in enumerate(prompts)]
    lasts = sorted({len(one) - 1 for one in unequal})
    unequal_ablated = explorer.Intervention().ablate(int(layer), int(head), positions=lasts)
    ours["unequal lengths: logit difference"] = lambda: differences(unequal)
    ours["unequal lengths: ablation"] = lambda: differences(unequal, unequal_ablated)
    theirs.update(hf_unequal_side(hf, unequal, target, against, int(layer), int(head), lasts))
    print(f"{model.name}, {len(prompts)} prompts of {batch.shape[1]} tokens "
          f"(unequal: {', '.join(str(len(one)) for one in unequal)}), torch threads {torch.get_num_threads()}")
    print(f"{'step':34} {'explorer s':>11} {'transformers s':>15} {'ratio':>7} {'CPU s':>15} {'CPU ratio':>10}")
    for step in ours:
        (a, a_cpu), (b, b_cpu) = best_alternating(ours[step], theirs[step])
        print(f"{step:34} {a:11.3f} {b:15.3f} {a / b:7.2f} {a_cpu:7.3f} {b_cpu:7.3f} {a_cpu / b_cpu:10.2f}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    options = arguments()
    REPEAT, BLOCK = options.repeat, options.block
    main(options.model, options.threads)
