"""A byte-level BPE (GPT-2 style) trained on the training plays, shared by all four models.

Byte-level means every string is encodable (no unknown token); ~4k merges keep
the embedding table small, which is most of a 2.5M-parameter model.
"""
from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

END_OF_TEXT = "<|endoftext|>"
DEFAULT_VOCAB_SIZE = 4096


def train_tokenizer(texts: list[str], vocab_size: int = DEFAULT_VOCAB_SIZE) -> Tokenizer:
    """Train the BPE on `texts`; id 0 is the end-of-text marker that separates plays."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


def load_tokenizer(path: str | Path) -> Tokenizer:
    """A tokenizer.json written by `train_tokenizer` (or any tokenizers file)."""
    return Tokenizer.from_file(str(path))


def end_of_text_id(tokenizer: Tokenizer) -> int:
    token_id = tokenizer.token_to_id(END_OF_TEXT)
    if token_id is None:
        raise ValueError(f"the tokenizer has no {END_OF_TEXT} token")
    return token_id
