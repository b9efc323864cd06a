"""Build a `tokenizers.Tokenizer` from a GGUF file's `tokenizer.ggml.*` metadata.

Two vocabularies occur in the files we open:
- "gpt2": byte-level BPE with an explicit merge list (SmolLM2, Llama 3, Qwen);
  the pre-tokenizer regex is chosen by `tokenizer.ggml.pre`.
- "llama": SentencePiece BPE with per-piece scores and byte fallback (Gemma, Llama 2).
  SentencePiece merges the adjacent pair whose joined piece has the highest score,
  as llama.cpp's SPM tokenizer does; we turn the scores into a ranked merge list
  (the way transformers converts a SentencePiece model to tokenizer.json).
"""
from __future__ import annotations

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from explorer.core.errors import UnsupportedModelError
from explorer.core.tokens import TextTokenizer

# llama.cpp token types (llama_token_type): 3 = control, 4 = user defined, 6 = byte.
CONTROL, USER_DEFINED = 3, 4

_GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                   r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def _byte_level_pre_tokenizer(pre: str):
    """The pre-tokenizer llama.cpp uses for `tokenizer.ggml.pre` (a table, unknown -> GPT-2's regex)."""
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    split = {
        "llama-bpe": _LLAMA3_PATTERN, "llama3": _LLAMA3_PATTERN, "smaug-bpe": _LLAMA3_PATTERN,
        "qwen2": _QWEN2_PATTERN, "deepseek-r1-qwen": _QWEN2_PATTERN,
    }.get(pre)
    if split is not None:
        return pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated"), byte_level])
    gpt2 = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), gpt2])
    return gpt2


def _add_listed_tokens(tokenizer: Tokenizer, tokens: list[str], types: list[int]) -> None:
    """Control tokens become special tokens; user-defined ones are matched whole but are text."""
    control = [AddedToken(p, special=True, normalized=False) for p, k in zip(tokens, types) if k == CONTROL]
    user = [AddedToken(p, special=False, normalized=False) for p, k in zip(tokens, types) if k == USER_DEFINED]
    tokenizer.add_special_tokens(control)
    tokenizer.add_tokens(user)


def _gpt2_tokenizer(meta: dict) -> Tokenizer:
    tokens = meta["tokenizer.ggml.tokens"]
    vocab = {piece: index for index, piece in enumerate(tokens)}
    merges = [tuple(m.split(" ", 1)) for m in meta.get("tokenizer.ggml.merges", [])]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, ignore_merges=False))
    tokenizer.pre_tokenizer = _byte_level_pre_tokenizer(str(meta.get("tokenizer.ggml.pre", "gpt2")))
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def sentencepiece_merges(tokens: list[str], scores: list[float], types: list[int]) -> list[tuple[str, str]]:
    """Every split of a normal piece into two vocabulary pieces, ranked by the joined piece's score."""
    vocab = {piece: index for index, piece in enumerate(tokens) if types[index] in (1, 2)}
    merges = []
    for piece, index in vocab.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                merges.append((-scores[index], vocab[left], vocab[right], left, right))
    merges.sort()
    return [(left, right) for _, _, _, left, right in merges]


def _sentencepiece_tokenizer(meta: dict) -> Tokenizer:
    tokens = meta["tokenizer.ggml.tokens"]
    scores = meta.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = {piece: index for index, piece in enumerate(tokens)}
    unk = meta.get("tokenizer.ggml.unknown_token_id")
    unk_piece = tokens[unk] if unk is not None and 0 <= unk < len(tokens) else None
    model = models.BPE(vocab=vocab, merges=sentencepiece_merges(tokens, scores, types),
                       unk_token=unk_piece, fuse_unk=True, byte_fallback=True)
    tokenizer = Tokenizer(model)
    steps = [normalizers.Replace(" ", "▁")]
    if meta.get("tokenizer.ggml.add_space_prefix", True):
        steps.insert(0, normalizers.Prepend("▁"))
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.decoder = decoders.Sequence([
        decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    return tokenizer


def tokenizer_from_gguf(meta: dict, source: str) -> TextTokenizer:
    """A TextTokenizer from GGUF metadata (values already read into Python lists and scalars)."""
    kind = meta.get("tokenizer.ggml.model")
    if "tokenizer.ggml.tokens" not in meta:
        raise UnsupportedModelError(f"{source} has no tokenizer vocabulary (tokenizer.ggml.tokens).")
    if kind == "gpt2":
        tokenizer = _gpt2_tokenizer(meta)
        default_bos = False
    elif kind == "llama":
        tokenizer = _sentencepiece_tokenizer(meta)
        default_bos = True
    else:
        raise UnsupportedModelError(f"{source} uses the tokenizer type {kind!r}; only 'gpt2' and 'llama' are supported.")
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(meta["tokenizer.ggml.tokens"])
    _add_listed_tokens(tokenizer, meta["tokenizer.ggml.tokens"], types)
    return TextTokenizer(
        tokenizer,
        add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", default_bos)),
        bos_id=meta.get("tokenizer.ggml.bos_token_id"),
        eos_id=meta.get("tokenizer.ggml.eos_token_id"),
    )
