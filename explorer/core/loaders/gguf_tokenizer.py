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

import math

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from explorer.core.errors import ExplorerError, ModelLoadError, UnsupportedModelError
from explorer.core.loaders.load_progress import Progress, before_a_build
from explorer.core.tokens import TextTokenizer, first_line

# llama.cpp token types (llama_token_type): 3 = control, 4 = user defined, 6 = byte.
CONTROL, USER_DEFINED = 3, 4
PIECES_BETWEEN = 16_384     # pieces split (or merges read) between two calls of `between` (Gemma 3's 262k: 16 calls)
# Where a build's pieces end, as shares of its time (Gemma 3 270M, 262k pieces): the merge list, in Python, ~60 %;
# the library's model, built from it in one call, ~25 %; the listed tokens after it.
MERGES_DONE, MODEL_DONE = 0.6, 0.9
BUILDING = "building the tokenizer from the file's vocabulary"

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


def _merge_pair(merge: str, vocab: dict[str, int], source: str) -> tuple[str, str]:
    """As llama.cpp: the first space after the first character separates the two pieces. A piece the
    vocabulary lacks stops the list at once (the library refuses it too, but only after a 64 MB list had
    become two million strings and 700 MB)."""
    cut = merge.find(" ", 1)
    left, right = merge[:cut], merge[cut + 1:]
    if left not in vocab or right not in vocab:
        raise ModelLoadError(f"{source}: its tokenizer metadata cannot be built (the merge {merge[:40]!r} joins "
                             "a piece that is not in the vocabulary).")
    return left, right


def _gpt2_merges(meta: dict, source: str, between) -> list[tuple[str, str]]:
    """The file's merge list as pairs of pieces, `between(share done)` called every PIECES_BETWEEN merges."""
    vocab = {piece: index for index, piece in enumerate(meta["tokenizer.ggml.tokens"])}
    listed = meta.get("tokenizer.ggml.merges", [])
    merges = []
    for done, merge in enumerate(listed):
        if done and done % PIECES_BETWEEN == 0:
            between(done / len(listed))
        merges.append(_merge_pair(merge, vocab, source))
    return merges


def _gpt2_tokenizer(meta: dict, merges: list[tuple[str, str]]) -> Tokenizer:
    vocab = {piece: index for index, piece in enumerate(meta["tokenizer.ggml.tokens"])}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, ignore_merges=False))
    tokenizer.pre_tokenizer = _byte_level_pre_tokenizer(str(meta.get("tokenizer.ggml.pre", "gpt2")))
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


MAX_SPLIT_CHECKS = 20_000_000     # Gemma 3's 262k pieces need ~2M; a hostile vocabulary is refused, not ground through


def sentencepiece_merges(tokens: list[str], scores: list[float], types: list[int],
                         source: str = "the vocabulary", between=None) -> list[tuple[str, str]]:
    """Every split of a normal piece into two vocabulary pieces, ranked by the joined piece's score.

    Only cuts where both sides have lengths that some vocabulary piece has are tried, and the number
    of cuts tried over the whole vocabulary is bounded, so the work grows with the vocabulary's length
    in characters, never with the square of one piece's. `between(share of the pieces split)` is called
    every PIECES_BETWEEN pieces (a load's progress, which may raise to cancel: Gemma 3's took seconds)."""
    vocab = {piece: index for index, piece in enumerate(tokens) if types[index] in (1, 2)}
    lengths = {len(piece) for piece in vocab}
    merges, checks = [], 0
    for done, (piece, index) in enumerate(vocab.items()):
        if done and done % PIECES_BETWEEN == 0 and between is not None:
            between(done / len(vocab))
        cuts = [cut for cut in range(1, len(piece)) if cut in lengths and len(piece) - cut in lengths]
        checks += len(cuts)
        if checks > MAX_SPLIT_CHECKS:
            raise ModelLoadError(f"{source}: its SentencePiece vocabulary has more ways to split its pieces than "
                                 f"the {MAX_SPLIT_CHECKS:,} a real vocabulary has; it was not built.")
        for cut in cuts:
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                merges.append((-scores[index], vocab[left], vocab[right], left, right))
    merges.sort()
    return [(left, right) for _, _, _, left, right in merges]


def _sentencepiece_merges(meta: dict, source: str, between) -> list[tuple[str, str]]:
    tokens = meta["tokenizer.ggml.tokens"]
    scores = meta.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    return sentencepiece_merges(tokens, scores, types, source, between)


def _sentencepiece_tokenizer(meta: dict, merges: list[tuple[str, str]]) -> Tokenizer:
    tokens = meta["tokenizer.ggml.tokens"]
    vocab = {piece: index for index, piece in enumerate(tokens)}
    unk = meta.get("tokenizer.ggml.unknown_token_id")
    unk_piece = tokens[unk] if unk is not None and 0 <= unk < len(tokens) else None
    model = models.BPE(vocab=vocab, merges=merges, unk_token=unk_piece, fuse_unk=True, byte_fallback=True)
    tokenizer = Tokenizer(model)
    steps = [normalizers.Replace(" ", "▁")]
    if meta.get("tokenizer.ggml.add_space_prefix", True):
        steps.insert(0, normalizers.Prepend("▁"))
    tokenizer.normalizer = normalizers.Sequence(steps)
    tokenizer.decoder = decoders.Sequence([
        decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    return tokenizer


# tokenizer.ggml.model -> (its merge list, in Python; the library's tokenizer built from it; whether BOS is added
# when the file does not say)
BUILDERS = {"gpt2": (_gpt2_merges, _gpt2_tokenizer, False),
            "llama": (_sentencepiece_merges, _sentencepiece_tokenizer, True)}


def _is_id(value, tokens: list) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(tokens)


def _all(values, kind) -> bool:
    return isinstance(values, list) and all(isinstance(v, kind) and not isinstance(v, bool) for v in values)


# key -> (whether its value is legal given the token list, what it must be); absent keys take defaults.
TOKENIZER_RULES = {
    "tokenizer.ggml.model": (lambda v, t: isinstance(v, str), "a string"),
    "tokenizer.ggml.pre": (lambda v, t: isinstance(v, str), "a string"),
    "tokenizer.ggml.merges": (lambda v, t: _all(v, str) and all(0 < m.find(" ", 1) < len(m) - 1 for m in v),
                              "a list of two pieces joined by a space"),
    "tokenizer.ggml.scores": (lambda v, t: _all(v, (int, float)) and len(v) == len(t) and all(map(math.isfinite, v)),
                              "one finite score per token"),
    "tokenizer.ggml.token_type": (lambda v, t: _all(v, int) and len(v) == len(t), "one integer type per token"),
    "tokenizer.ggml.bos_token_id": (_is_id, "a token id of the vocabulary"),
    "tokenizer.ggml.eos_token_id": (_is_id, "a token id of the vocabulary"),
    "tokenizer.ggml.unknown_token_id": (_is_id, "a token id of the vocabulary"),
    "tokenizer.ggml.add_bos_token": (lambda v, t: isinstance(v, (bool, int)), "true or false"),
    "tokenizer.ggml.add_space_prefix": (lambda v, t: isinstance(v, (bool, int)), "true or false"),
}


def check_tokenizer_metadata(meta: dict, source: str) -> None:
    """ModelLoadError naming the first tokenizer.ggml.* value of the wrong type or out of range."""
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is None:
        raise UnsupportedModelError(f"{source} has no tokenizer vocabulary (tokenizer.ggml.tokens).")
    if not _all(tokens, str) or not tokens:
        raise ModelLoadError(f"{source}: tokenizer.ggml.tokens is not a list of strings.")
    for key, (legal, wanted) in TOKENIZER_RULES.items():
        if key in meta and not legal(meta[key], tokens):
            shown = type(meta[key]).__name__ if isinstance(meta[key], (list, dict)) else repr(meta[key])[:40]
            raise ModelLoadError(f"{source}: {key} = {shown} is not legal: it must be {wanted}.")


def tokenizer_from_gguf(meta: dict, source: str, progress: Progress | None = None) -> TextTokenizer:
    """A TextTokenizer from GGUF metadata (values already read into Python lists and scalars).

    `progress(share of the build done, what)` is called between its pieces, and within the merge list (a load's
    progress: Gemma 3's build takes seconds), and says a Pause before the library's build when that holds the
    window (load_progress.before_a_build). What it raises (a Cancel) passes as it is, never as a bad file."""
    report = progress or (lambda share, text: None)
    check_tokenizer_metadata(meta, source)
    kind = meta.get("tokenizer.ggml.model")
    if kind not in BUILDERS:
        raise UnsupportedModelError(
            f"{source} uses the tokenizer type {kind!r}; only 'gpt2' and 'llama' are supported.")
    merges_of, build, default_bos = BUILDERS[kind]
    merges = merges_of(meta, source, lambda share: report(MERGES_DONE * share, BUILDING))
    report(MERGES_DONE, BUILDING)
    before_a_build(progress, MERGES_DONE, len(merges))
    tokenizer = _by_the_library(source, lambda: build(meta, merges))
    report(MODEL_DONE, BUILDING)
    types = meta.get("tokenizer.ggml.token_type") or [1] * len(meta["tokenizer.ggml.tokens"])
    _by_the_library(source, lambda: _add_listed_tokens(tokenizer, meta["tokenizer.ggml.tokens"], types))
    return TextTokenizer(
        tokenizer,
        add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", default_bos)),
        bos_id=meta.get("tokenizer.ggml.bos_token_id"),
        eos_id=meta.get("tokenizer.ggml.eos_token_id"),
    )


def _by_the_library(source: str, call):
    """`call()`, which the tokenizers library runs: whatever it raises is one ModelLoadError naming `source`."""
    try:
        return call()
    except ExplorerError:
        raise
    except BaseException as error:  # noqa: B036 -- tokenizers raises bare Exceptions, and Rust panics as BaseException
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        raise ModelLoadError(f"{source}: its tokenizer metadata cannot be built ({first_line(error)}).") from None
