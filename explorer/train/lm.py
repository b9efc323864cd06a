"""The training loop of the bundled Shakespeare models: next-token cross-entropy, AdamW, cosine LR.

    loss = -(1/T) Σ_t log softmax(f(x_<t))[x_t]     (nats per token)

A run is a pure function of (corpus, tokenizer, settings, seed, thread count):
the initial weights come from the seeded global generator and the batches from
their own seeded generator. The shipped folder is a standard Hugging Face
folder (config.json, model.safetensors in float16, tokenizer.json) plus
training.json, whose validation loss is measured on the float16 weights as shipped.
"""
from __future__ import annotations

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
import transformers
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM

from explorer.core import files
from explorer.train import corpus as plays_corpus
from explorer.train import variants
from explorer.train.tokenizer import END_OF_TEXT, end_of_text_id, load_tokenizer, train_tokenizer

SHIPPED_DTYPE = torch.float16
CHECK_CHARS = 4000           # held-out text whose loss tests recompute from the shipped folder
SAMPLE_PROMPT = "HAMLET:\n"
SAMPLE_TOKENS = 200
SAMPLE_TEMPERATURE = 0.8


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides a run; recorded in training.json."""

    attention: str
    corpus: str
    out: str
    steps: int | None = None          # the schedule's length; None: fit it to `minutes`
    minutes: float | None = None      # wall-clock budget (a hard stop when `steps` is also given)
    seed: int = 0
    batch_size: int = 16
    context: int = variants.CONTEXT
    learning_rate: float = 2e-3
    weight_decay: float = 0.1
    tokenizer: str | None = None      # reuse a tokenizer.json instead of training one
    vocab_size: int = 4096


@dataclass
class Data:
    tokenizer: Tokenizer
    train_ids: torch.Tensor           # (N_train,) int64
    val_ids: torch.Tensor             # (N_val,) int64
    val_text: str
    train_plays: list[str]
    val_plays: list[str]


Progress = Callable[[str], None]


def prepare_data(settings: TrainSettings) -> Data:
    """Read the plays, split by play, get the tokenizer and tokenize both streams."""
    train, held_out = plays_corpus.split_by_play(plays_corpus.read_plays(settings.corpus))
    if settings.tokenizer:
        tokenizer = load_tokenizer(settings.tokenizer)
    else:
        tokenizer = train_tokenizer([play.text for play in train], settings.vocab_size)
    val_text = plays_corpus.join_plays(held_out, END_OF_TEXT)
    train_ids, val_ids = (
        torch.tensor(tokenizer.encode(text).ids, dtype=torch.int64)
        for text in (plays_corpus.join_plays(train, END_OF_TEXT), val_text)
    )
    return Data(tokenizer, train_ids, val_ids, val_text,
                [play.name for play in train], [play.name for play in held_out])


def build_model(attention: str, tokenizer: Tokenizer, context: int, seed: int) -> torch.nn.Module:
    """A fresh variant with every matrix drawn from N(0, 0.02) under `seed` and norms at 1."""
    config = variants.model_config(attention, tokenizer.get_vocab_size(), end_of_text_id(tokenizer))
    config.max_position_embeddings = context
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() >= 2:
                parameter.normal_(0.0, 0.02)
            elif name.endswith("norm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.zero_()
    return model


def count_parameters(model: torch.nn.Module) -> int:
    """Distinct parameters: the tied embedding / unembedding counts once."""
    return sum(parameter.numel() for parameter in model.parameters())


def warmup_cosine(step: int, total: int, peak: float, warmup: int, floor: float) -> float:
    """Linear warmup over `warmup` steps, then cosine decay from `peak` down to `floor` * peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress)))


def learning_rate(step: int, total: int, peak: float) -> float:
    """Linear warmup over the first 5% (at most 100 steps), then cosine down to peak/10."""
    return warmup_cosine(step, total, peak, max(1, min(100, total // 20)), floor=0.1)


def optimizer_update(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                     smoothed: float | None) -> float:
    """One AdamW step with gradients clipped to norm 1; returns the exponentially smoothed loss."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item() if smoothed is None else 0.95 * smoothed + 0.05 * loss.item()


def make_optimizer(model: torch.nn.Module, settings: TrainSettings) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices only (not on norm gains)."""
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": settings.weight_decay},
              {"params": vectors, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=settings.learning_rate, betas=(0.9, 0.95), eps=1e-8)


def sample_batch(ids: torch.Tensor, batch_size: int, context: int,
                 generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of the training stream: inputs X and next-token targets Y, (B, T) each."""
    starts = torch.randint(0, len(ids) - context - 1, (batch_size,), generator=generator)
    windows = torch.stack([ids[start:start + context + 1] for start in starts.tolist()])  # (B, T+1)
    return windows[:, :-1], windows[:, 1:]


def next_token_loss(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy in nats per token."""
    logits = model(input_ids=inputs).logits                                     # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


@torch.no_grad()
def loss_per_token(model: torch.nn.Module, ids: torch.Tensor, context: int, batch_size: int = 16) -> float:
    """Held-out loss over EVERY token of `ids`, in consecutive non-overlapping windows of `context`.

    Window w predicts ids[w·T+1 : (w+1)·T+1] from ids[w·T : (w+1)·T]; the last window may be shorter.
    """
    model.eval()
    total, count = 0.0, 0
    starts = list(range(0, len(ids) - 1, context))
    full = [s for s in starts if s + context + 1 <= len(ids)]
    for first in range(0, len(full), batch_size):
        windows = torch.stack([ids[s:s + context + 1] for s in full[first:first + batch_size]])
        loss = next_token_loss(model, windows[:, :-1], windows[:, 1:])
        total, count = total + loss.item() * windows[:, 1:].numel(), count + windows[:, 1:].numel()
    for start in starts[len(full):]:
        tail = ids[start:].unsqueeze(0)                                         # (1, t+1)
        loss = next_token_loss(model, tail[:, :-1], tail[:, 1:])
        total, count = total + loss.item() * (tail.shape[1] - 1), count + tail.shape[1] - 1
    return total / count


@torch.no_grad()
def sample(model: torch.nn.Module, tokenizer: Tokenizer, prompt: str, tokens: int,
           temperature: float, seed: int, context: int) -> str:
    """Continue `prompt` by `tokens` tokens; temperature 0 is greedy. Returns prompt + continuation."""
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    ids = tokenizer.encode(prompt).ids
    for _ in range(tokens):
        window = torch.tensor([ids[-context:]])                                 # (1, T)
        logits = model(input_ids=window).logits[0, -1].float()                  # (V,)
        if temperature <= 0:
            next_id = int(logits.argmax())
        else:
            probabilities = torch.softmax(logits / temperature, dim=-1)
            next_id = int(torch.multinomial(probabilities, 1, generator=generator))
        ids.append(next_id)
    return tokenizer.decode(ids, skip_special_tokens=False)


def plan_steps(model: torch.nn.Module, data: Data, settings: TrainSettings) -> tuple[int, float]:
    """(steps, seconds per step): `settings.steps`, or as many as fit in `settings.minutes`.

    The timing runs forward+backward on throwaway batches from a separate
    generator and applies no update, so it does not change the run's result.
    """
    if settings.steps:
        return settings.steps, float("nan")
    generator = torch.Generator().manual_seed(2**31 - 1)
    model.train()
    elapsed = []
    for _ in range(4):
        started = time.perf_counter()
        inputs, targets = sample_batch(data.train_ids, settings.batch_size, settings.context, generator)
        next_token_loss(model, inputs, targets).backward()
        elapsed.append(time.perf_counter() - started)
    model.zero_grad(set_to_none=True)
    per_step = sorted(elapsed[1:])[1] * 1.05  # median of the warm ones, plus the optimizer's share
    return max(1, int(settings.minutes * 60 / per_step)), per_step


def run_training(settings: TrainSettings, progress: Progress = print) -> dict:
    """Train one variant and write its folder; returns the training record."""
    started = time.perf_counter()
    data = prepare_data(settings)
    model = build_model(settings.attention, data.tokenizer, settings.context, settings.seed)
    steps, per_step = plan_steps(model, data, settings)
    progress(f"{settings.attention}: {count_parameters(model):,} parameters, {len(data.train_ids):,} "
             f"training tokens, {len(data.val_ids):,} held-out tokens, {steps} steps"
             + (f" (~{per_step:.2f} s/step)" if per_step == per_step else ""))
    done = train_steps(model, data, settings, steps, progress)
    wall = time.perf_counter() - started
    record = finish(model, data, settings, done, wall, progress)
    progress(f"{settings.attention}: held-out loss {record['val_loss_per_token']:.4f} nats/token "
             f"after {done} steps, {wall / 60:.1f} min; wrote {settings.out}")
    return record


def train_steps(model: torch.nn.Module, data: Data, settings: TrainSettings, steps: int,
                progress: Progress) -> int:
    """The loop. Returns the number of steps done (fewer than `steps` only if `minutes` ran out)."""
    optimizer = make_optimizer(model, settings)
    generator = torch.Generator().manual_seed(settings.seed)
    deadline = time.perf_counter() + settings.minutes * 60 if settings.minutes else math.inf
    started, smoothed = time.perf_counter(), None
    every = max(1, steps // 100)
    model.train()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, steps, settings.learning_rate)
        inputs, targets = sample_batch(data.train_ids, settings.batch_size, settings.context, generator)
        smoothed = optimizer_update(model, optimizer, next_token_loss(model, inputs, targets), smoothed)
        if (step + 1) % every == 0 or step + 1 == steps:
            progress(progress_line(step + 1, steps, smoothed, optimizer.param_groups[0]["lr"],
                                   time.perf_counter() - started, settings))
        if time.perf_counter() > deadline and settings.steps:
            progress(f"time budget of {settings.minutes} min reached at step {step + 1}")
            return step + 1
    return steps


def progress_line(step: int, steps: int, loss: float, lr: float, elapsed: float,
                  settings: TrainSettings) -> str:
    tokens_per_second = step * settings.batch_size * settings.context / max(elapsed, 1e-9)
    remaining = elapsed / step * (steps - step)
    return (f"step {step:>5}/{steps}  loss {loss:.3f}  lr {lr:.2e}  "
            f"{tokens_per_second:,.0f} tok/s  eta {int(remaining // 60)}:{int(remaining % 60):02d}")


def finish(model: torch.nn.Module, data: Data, settings: TrainSettings, steps: int, wall: float,
           progress: Progress) -> dict:
    """Save the float16 folder, reload it, and measure the loss and the sample on what ships."""
    out = Path(settings.out)
    parameters = count_parameters(model)
    save_folder(model, data.tokenizer, out, settings.context)
    shipped = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    progress("measuring the held-out loss of the float16 weights ...")
    record = {
        "attention": settings.attention,
        "architecture": type(shipped).__name__,
        "parameters": parameters,
        **measure(shipped, data, settings),
        "steps": steps,
        "seed": settings.seed,
        "tokens_seen": steps * settings.batch_size * settings.context,
        "wall_time_s": round(wall, 1),
        "threads": torch.get_num_threads(),
        "dtype": str(SHIPPED_DTYPE).removeprefix("torch."),
        "kv_elements_per_token_per_layer": variants.kv_elements_per_token_per_layer(shipped.config.to_dict()),
        "settings": asdict(settings),
        "corpus": plays_corpus.ATTRIBUTION,
        "versions": versions(),
    }
    write_record(out, record)
    return record


def write_record(out: Path, record: dict) -> None:
    """training.json beside the weights, written as every file is (files.write_atomic)."""
    text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    files.write_atomic(out / "training.json", lambda path: Path(path).write_text(text, encoding="utf-8"), "the record")


def save_folder(model: torch.nn.Module, tokenizer: Tokenizer, out: Path, context: int) -> None:
    """A Hugging Face folder: config.json, float16 model.safetensors (tied weights stored once), tokenizer: the
    whole folder or nothing (files.write_folder)."""
    def write(into: Path) -> None:
        model.to(SHIPPED_DTYPE).save_pretrained(into)
        tokenizer.save(str(into / "tokenizer.json"))
        write_tokenizer_config(into, context)
    files.write_folder(out, write, "the trained model")


def measure(shipped: torch.nn.Module, data: Data, settings: TrainSettings) -> dict:
    """Held-out loss over every validation token, the small check slice tests recompute, and a sample."""
    check_text = data.val_text[:CHECK_CHARS].rsplit("\n", 1)[0] + "\n"
    check_ids = data.tokenizer.encode(check_text).ids
    return {
        "val_loss_per_token": round(loss_per_token(shipped, data.val_ids, settings.context), 5),
        "val_tokens": len(data.val_ids),
        "val_plays": data.val_plays,
        "train_plays": data.train_plays,
        "check": {"text": check_text, "ids": check_ids, "context": settings.context,
                  "loss_per_token": loss_per_token(shipped, torch.tensor(check_ids), settings.context)},
        "sample": {"prompt": SAMPLE_PROMPT, "temperature": SAMPLE_TEMPERATURE, "seed": settings.seed,
                   "text": sample(shipped, data.tokenizer, SAMPLE_PROMPT, SAMPLE_TOKENS,
                                  SAMPLE_TEMPERATURE, settings.seed, settings.context)},
    }


def write_tokenizer_config(out: Path, context: int) -> None:
    """The small file transformers' AutoTokenizer wants beside tokenizer.json."""
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": END_OF_TEXT,
              "eos_token": END_OF_TEXT, "unk_token": None, "model_max_length": context,
              "add_bos_token": False, "clean_up_tokenization_spaces": False}
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")


def versions() -> dict:
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}
