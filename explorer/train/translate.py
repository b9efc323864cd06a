"""Train the bundled EN<->ZH encoder-decoder (explorer/core/encdec.py) on generated dates and numbers.

    loss = -(1/T) Σ_t log p(y_t | y_<t, x)      (teacher forcing, nats per target token)

    python -m explorer train --task translate --out resources/models/translate-en-zh --minutes 15

The run is a pure function of (settings, seed, thread count): initial weights
come from the seeded global generator and the pairs from their own seeded
stream, from which the held-out sample (translate_data.held_out_pairs) is
excluded. The folder it writes is config.json (model_type explorer-encdec),
model.safetensors (float16), tokenizer.json and training.json, whose held-out
exact match is measured on the float16 weights as shipped, reloaded from disk.
"""
from __future__ import annotations

import itertools
import json
import math
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import tokenizers
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tokenizers import Tokenizer

from explorer.core import files
from explorer.core.encdec import EncDecConfig, EncoderDecoder, TargetStep, load
from explorer.core.errors import ExplorerError
from explorer.core.loaders import open_checkpoint
from explorer.train import translate_data as data
from explorer.train.lm import optimizer_update, warmup_cosine, write_record
from explorer.train.threads import torch_threads

SHIPPED_DTYPE = torch.float16
HELD_OUT = 2000                  # pairs never trained on; exact match is measured on all of them
MAX_TARGET = 24                  # target tokens generated at most when translating

Progress = Callable[[str], None]


@dataclass(frozen=True)
class TranslateSettings:
    """Everything that decides a run; recorded in training.json."""

    out: str
    steps: int | None = None          # the schedule's length; None: fit it to `minutes`
    minutes: float | None = None      # wall-clock budget (a hard stop when `steps` is also given)
    seed: int = 0
    batch_size: int = 96
    learning_rate: float = 1.5e-3
    warmup: int = 300
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 256
    layers: int = 3                   # encoder layers = decoder layers
    vocab_size: int = 256
    held_out: int = HELD_OUT          # held-out pairs to measure (the sample is a prefix of one fixed list)
    check_small_numbers: bool = True  # also translate all 1998 small-number pairs
    tokenizer_samples: int = 20000    # generated pairs the BPE is trained on


def model_config(settings: TranslateSettings, tokenizer: Tokenizer) -> EncDecConfig:
    ids = {token: tokenizer.token_to_id(token) for token in (data.PAD, data.BOS, data.EOS)}
    return EncDecConfig(vocab_size=tokenizer.get_vocab_size(), d_model=settings.d_model, n_heads=settings.n_heads,
                        d_ff=settings.d_ff, n_encoder_layers=settings.layers, n_decoder_layers=settings.layers,
                        max_positions=64, pad_id=ids[data.PAD], bos_id=ids[data.BOS], eos_id=ids[data.EOS])


def build_model(config: EncDecConfig, seed: int) -> EncoderDecoder:
    """Xavier-uniform matrices, E ~ N(0, d^-1/2) (so E * sqrt(d) has unit scale), zero biases."""
    torch.manual_seed(seed)
    model = EncoderDecoder(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name == "embed.weight":
                parameter.normal_(0.0, config.d_model ** -0.5)
            elif parameter.dim() >= 2:
                torch.nn.init.xavier_uniform_(parameter)
            elif "norm" in name and name.endswith("weight"):
                parameter.fill_(1.0)
            else:
                parameter.zero_()
    return model


def pad(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    width = max(len(row) for row in rows)
    return torch.tensor([row + [pad_id] * (width - len(row)) for row in rows], dtype=torch.int64)


def encode_batch(tokenizer: Tokenizer, config: EncDecConfig, pairs) -> tuple[torch.Tensor, torch.Tensor]:
    """Sources (B, S) and targets <s> y </s> (B, T+2), padded with <pad>."""
    sources = [tokenizer.encode(source).ids for source, _ in pairs]
    targets = [[config.bos_id] + tokenizer.encode(target).ids + [config.eos_id] for _, target in pairs]
    return pad(sources, config.pad_id), pad(targets, config.pad_id)


def translation_loss(model: EncoderDecoder, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of every real target token given the ones before it."""
    pad_id = model.config.pad_id
    logits = model(source, target[:, :-1], pad_id)                              # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target[:, 1:].reshape(-1),
                           ignore_index=pad_id)


@torch.no_grad()
def translate(model: EncoderDecoder, tokenizer: Tokenizer, sources: list[str], batch_size: int = 256) -> list[str]:
    """Greedy translations of `sources` (each begins with <2zh> or <2en>), in batches."""
    model.eval()
    config, out = model.config, []
    for first in range(0, len(sources), batch_size):
        source = pad([tokenizer.encode(s).ids for s in sources[first:first + batch_size]], config.pad_id)
        visible = (source != config.pad_id)[:, None, None, :]                  # (B, 1, 1, S)
        cross_kv = model.cross_keys_values(model.encode(source, visible))       # once per source
        target = torch.full((len(source), 1), config.bos_id, dtype=torch.int64)
        for _ in range(MAX_TARGET):
            step = TargetStep(torch.arange(target.shape[1]).numpy(), visible)
            hidden = model.decode(target, step, cross_kv)[:, -1]                # (B, d)
            target = torch.cat((target, model.logits(hidden).argmax(-1, keepdim=True)), dim=1)
            if bool((target == config.eos_id).any(dim=1).all()):
                break
        for row in target[:, 1:].tolist():
            row = row[: row.index(config.eos_id)] if config.eos_id in row else row
            out.append(tokenizer.decode(row, skip_special_tokens=True))
    return out


def exact_match(model: EncoderDecoder, tokenizer: Tokenizer, pairs) -> tuple[float, list[dict]]:
    """Share of pairs translated exactly, and the misses (at most 20)."""
    guesses = translate(model, tokenizer, [source for source, _ in pairs])
    misses = [{"source": s, "target": t, "got": g} for (s, t), g in zip(pairs, guesses) if g != t]
    return 1.0 - len(misses) / len(pairs), misses[:20]


def learning_rate(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warmup, then cosine down to peak/20."""
    return warmup_cosine(step, total, peak, max(1, min(warmup, total // 5)), floor=0.05)


def plan_steps(model, tokenizer, config, settings: TranslateSettings) -> tuple[int, float]:
    """`settings.steps`, or as many steps as fit in `settings.minutes` (timed on throwaway batches)."""
    if settings.steps:
        return settings.steps, float("nan")
    stream = data.training_pairs(2**31 - 1, set())
    elapsed = []
    for _ in range(4):
        started = time.perf_counter()
        source, target = encode_batch(tokenizer, config, list(itertools.islice(stream, settings.batch_size)))
        translation_loss(model, source, target).backward()
        elapsed.append(time.perf_counter() - started)
    model.zero_grad(set_to_none=True)
    per_step = sorted(elapsed[1:])[1] * 1.1  # the warm median, plus the optimizer's share
    return max(1, int(settings.minutes * 60 / per_step)), per_step


def train_steps(model, tokenizer, config, settings: TranslateSettings, steps: int, held_out, progress) -> int:
    """The loop; returns the number of steps done (fewer only if a --minutes cap with --steps ran out)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.learning_rate, betas=(0.9, 0.98), eps=1e-9)
    stream = data.training_pairs(settings.seed, {source for source, _ in held_out})
    deadline = time.perf_counter() + settings.minutes * 60 if settings.minutes and settings.steps else math.inf
    started, smoothed, every = time.perf_counter(), None, max(1, steps // 50)
    for step in range(steps):
        model.train()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, steps, settings.learning_rate, settings.warmup)
        source, target = encode_batch(tokenizer, config, list(itertools.islice(stream, settings.batch_size)))
        smoothed = optimizer_update(model, optimizer, translation_loss(model, source, target), smoothed)
        if (step + 1) % every == 0 or step + 1 == steps:
            elapsed = time.perf_counter() - started
            line = f"step {step + 1:>5}/{steps}  loss {smoothed:.4f}  {elapsed / 60:.1f} min"
            if (step + 1) % (every * 10) == 0:
                line += f"  exact match {exact_match(model, tokenizer, held_out[:200])[0]:.3f} (200 held out)"
            progress(line)
        if time.perf_counter() > deadline:
            progress(f"time budget of {settings.minutes} min reached at step {step + 1}")
            return step + 1
    return steps


def save(model: EncoderDecoder, tokenizer: Tokenizer, out: Path) -> None:
    """config.json, float16 model.safetensors (E once: the softmax weights are tied to it), tokenizer.json: the
    whole folder or nothing (files.write_folder)."""
    state = {name: tensor.detach().to(SHIPPED_DTYPE).contiguous() for name, tensor in model.state_dict().items()}
    settings = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": data.BOS, "eos_token": data.EOS,
                "pad_token": data.PAD, "add_bos_token": False, "clean_up_tokenization_spaces": False}

    def write(into: Path) -> None:
        (into / "config.json").write_text(json.dumps(model.config.to_json(), indent=1) + "\n")
        save_file(state, str(into / "model.safetensors"), metadata={"format": "pt"})
        tokenizer.save(str(into / "tokenizer.json"))
        (into / "tokenizer_config.json").write_text(json.dumps(settings, indent=1) + "\n")
    files.write_folder(out, write, "the trained model")


def reload(out: Path) -> EncoderDecoder:
    """The shipped folder through the explorer's own loader (float16 weights computed in float32)."""
    return load(open_checkpoint(out)).model


def run_training(settings: TranslateSettings, progress: Progress = print) -> dict:
    """Train, save, reload what ships and measure its held-out exact match; returns training.json's record."""
    started = time.perf_counter()
    tokenizer = data.build_tokenizer(settings.seed, settings.vocab_size, settings.tokenizer_samples)
    config = model_config(settings, tokenizer)
    model = build_model(config, settings.seed)
    held_out = data.held_out_pairs(settings.held_out)
    steps, per_step = plan_steps(model, tokenizer, config, settings)
    n_params = sum(p.numel() for p in model.parameters())
    progress(f"translate: {n_params:,} parameters, vocabulary {config.vocab_size}, {steps} steps of "
             f"{settings.batch_size} pairs" + (f" (~{per_step:.2f} s/step)" if per_step == per_step else ""))
    done = train_steps(model, tokenizer, config, settings, steps, held_out, progress)
    wall = time.perf_counter() - started
    out = Path(settings.out)
    save(model, tokenizer, out)
    progress("measuring the held-out exact match of the float16 weights ...")
    shipped = reload(out)
    accuracy, misses = exact_match(shipped, tokenizer, held_out)
    small_accuracy, small_misses = (exact_match(shipped, tokenizer, data.small_number_pairs())
                                    if settings.check_small_numbers else (None, []))
    record = {
        "task": "translate", "architecture": "ExplorerEncoderDecoder (Vaswani et al. 2017, post-LN)",
        "parameters": n_params, "held_out_pairs": len(held_out), "held_out_exact_match": round(accuracy, 5),
        "held_out_misses": misses,
        "small_numbers_exact_match": None if small_accuracy is None else round(small_accuracy, 5),
        "small_numbers_misses": small_misses, "steps": done, "pairs_seen": done * settings.batch_size,
        "seed": settings.seed, "wall_time_s": round(wall, 1), "threads": torch.get_num_threads(),
        "dtype": str(SHIPPED_DTYPE).removeprefix("torch."),
        "model_bytes": (out / "model.safetensors").stat().st_size,
        "examples": [{"source": s, "translation": t} for s, t in zip(
            EXAMPLES, translate(shipped, tokenizer, EXAMPLES))],
        "settings": asdict(settings), "versions": versions(),
    }
    write_record(out, record)
    progress(f"translate: held-out exact match {accuracy:.4f} on {len(held_out)} pairs "
             + (f"({small_accuracy:.4f} on all numbers below 1000) " if small_accuracy is not None else "")
             + f"after {done} steps, "
             f"{wall / 60:.1f} min; wrote {out}")
    return record


def run_from_args(args) -> int:
    """`train --task translate`: uses --out, --steps, --minutes, --seed and --threads (the rest is fixed here)."""
    if args.steps is None and args.minutes is None:
        raise ExplorerError("train --task translate needs --steps N or --minutes M (or both).")
    for name in ("steps", "minutes", "threads"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise ExplorerError(f"--{name} must be positive, not {value}.")
    settings = TranslateSettings(out=args.out, steps=args.steps, minutes=args.minutes, seed=args.seed)
    with torch_threads(args.threads):
        run_training(settings, progress=lambda line: print(line, flush=True))
    return 0


EXAMPLES = ["<2zh>March 5, 2024", "<2en>2024年3月5日", "<2zh>twelve thousand three hundred",
            "<2en>一万二千三百", "<2zh>one hundred twenty-three thousand four hundred fifty-six"]


def versions() -> dict:
    return {"python": platform.python_version(), "torch": torch.__version__, "tokenizers": tokenizers.__version__}
