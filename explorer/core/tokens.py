"""Text -> Tokens: the ids a model sees, and what each one looks like to a person.

`TextTokenizer` wraps a `tokenizers.Tokenizer` (from a tokenizer.json or built
from a GGUF vocabulary). Every token keeps its id, a display string in which
spaces, newlines and raw bytes are visible, its character span in the text the
user typed, whether it is special, and the exact bytes it stands for.

Three vocabularies spell bytes differently, and each is mapped back here:
byte-level BPE (GPT-2, SmolLM: 'Ġ' is a space, 'Ċ' a newline), SentencePiece
('▁' is a space, '<0xE2>' a raw byte), and WordPiece ('##' continues a word).
"""
from __future__ import annotations

import codecs
import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import tokenizers

from explorer.core.errors import ContextOverflowError, TokenizerError
from explorer.core.guarded import bounded_call, rust_panics_off_stderr

ENCODE_SECONDS = 3.0              # a pattern that backtracks catastrophically is given up on, not waited for
ENCODE_SECONDS_PER_CHAR = 2e-6    # ~20x the library's normal pace, so a long legal text always finishes
# A text this long is always tokenized, whatever the context: the app shows the tokens of a pasted book
# (and says why it cannot run it); past it, a text that cannot fit is refused from its length alone.
ALWAYS_TOKENIZED_CHARS = 1 << 20

SPACE, NEWLINE, TAB, RETURN = "␣", "↵", "⇥", "␍"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_BYTE_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
_SPECIAL_NAMES = {
    "bos": ("<|begin_of_text|>", "<bos>", "<s>", "[CLS]", "<|endoftext|>"),
    "eos": ("<|end_of_text|>", "<|eot_id|>", "<eos>", "</s>", "[SEP]", "<|endoftext|>"),
}


def _hex_bytes(error: UnicodeDecodeError) -> tuple[str, int]:
    """Decode error handler: show bytes that are not (yet) a whole character as <0xNN>."""
    bad = error.object[error.start:error.end]
    return "".join(f"<0x{b:02X}>" for b in bad), error.end


codecs.register_error("explorer_hex", _hex_bytes)


def sanitize(text: str) -> str:
    """Replace lone surrogates (e.g. from a broken clipboard) by U+FFFD, keeping every offset."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def draws_nothing(ch: str) -> bool:
    """A character no font draws a mark for: a format character (U+200D, U+200B, U+2060), a variation selector
    (U+FE0F after an emoji), a space other than ' ', a line or paragraph separator."""
    code, category = ord(ch), unicodedata.category(ch)
    return (category in ("Cf", "Zl", "Zp") or (category == "Zs" and ch != " ")
            or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF)


def visible(text: str) -> str:
    """Make whitespace and control characters visible: ' '->'␣', '\\n'->'↵', '\\t'->'⇥', C0 -> control pictures, a
    character that draws nothing -> <U+FE0F> (drive29: the variation selector's row had an empty token cell)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == " ":
            out.append(SPACE)
        elif ch == "\n":
            out.append(NEWLINE)
        elif ch == "\t":
            out.append(TAB)
        elif ch == "\r":
            out.append(RETURN)
        elif code < 0x20:
            out.append(chr(0x2400 + code))
        elif code == 0x7F:
            out.append("␡")
        elif code > 0x7F and draws_nothing(ch):
            out.append(f"<U+{code:04X}>")
        else:
            out.append(ch)
    return "".join(out)


def bytes_to_display(raw: bytes) -> str:
    """Readable form of a token's bytes: UTF-8 where it decodes, <0xNN> where it does not."""
    return visible(raw.decode("utf-8", errors="explorer_hex"))


@lru_cache(maxsize=1)
def byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte <-> printable-character table, inverted: char -> byte (e.g. 'Ġ' -> 0x20)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[chr(byte)] = byte
        else:
            chars[chr(256 + extra)] = byte
            extra += 1
    return chars


@dataclass(frozen=True)
class Tokens:
    """A tokenized text: one entry per token, in order.

    ids: (n,) int64; text: display strings; spans: (start, end) character offsets
    into `source` (the text as tokenized, with lone surrogates replaced); special: (n,) bool;
    raw: the bytes each token stands for (b"" for special tokens).
    """

    ids: np.ndarray
    text: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    special: np.ndarray
    raw: tuple[bytes, ...]
    source: str = ""

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def first_line(error: BaseException) -> str:
    """The first line of an error from the tokenizers library (its messages run over many lines)."""
    lines = str(error).splitlines()
    return (lines[0] if lines else type(error).__name__)[:120]


def _component_json(component) -> str:
    """One pipeline part (pre-tokenizer, decoder) as its JSON, without serializing the whole vocabulary."""
    if component is None:
        return "null"
    state = component.__getstate__()
    return state.decode("utf-8") if isinstance(state, bytes) else json.dumps(state)


def _vocabulary_kind(tokenizer: tokenizers.Tokenizer) -> str:
    """'byte_level', 'wordpiece' or 'sentencepiece': how the vocabulary spells bytes."""
    blob = _component_json(tokenizer.pre_tokenizer) + _component_json(tokenizer.decoder)
    if '"ByteLevel"' in blob:
        return "byte_level"
    if type(tokenizer.model).__name__ == "WordPiece":
        return "wordpiece"
    return "sentencepiece"


class TextTokenizer:
    """A `tokenizers.Tokenizer` plus the few facts a decoder needs: BOS/EOS ids and whether to add BOS.

    Padding and truncation are switched off: the explorer shows every token of the text.
    """

    def __init__(self, tokenizer: tokenizers.Tokenizer, add_bos: bool = False,
                 bos_id: int | None = None, eos_id: int | None = None):
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self.tokenizer = tokenizer
        self.add_bos = bool(add_bos)
        self.bos_id = bos_id if bos_id is not None else self._find_special("bos")
        self.eos_id = eos_id if eos_id is not None else self._find_special("eos")
        # Asked of the tokenizer itself: parsing its JSON (to_str) took ~0.1 s of a cold start.
        self.kind = _vocabulary_kind(tokenizer)
        self._special_ids = {i for i, token in tokenizer.get_added_tokens_decoder().items() if token.special}
        self._byte_chars = byte_level_alphabet()
        self._shown_cache: dict[int, tuple[str, bytes]] = {}
        self.context: int | None = None        # the model's context in tokens, set when a model is loaded
        self.source = "the tokenizer"          # the file it came from, for the sentences of its errors
        self._longest_piece: tuple[int, int] | None = None     # (characters, bytes), see longest_piece

    def _find_special(self, which: str) -> int | None:
        for name in _SPECIAL_NAMES[which]:
            token_id = self.tokenizer.token_to_id(name)
            if token_id is not None:
                return token_id
        return None

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    def knows(self, token_id: int) -> bool:
        """Whether the vocabulary holds a token of this id (ids need not be 0 to vocab_size - 1)."""
        return 0 <= token_id < 1 << 32 and self.tokenizer.id_to_token(int(token_id)) is not None

    def is_special(self, token_id: int) -> bool:
        return token_id in self._special_ids

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for; special tokens stand for none."""
        piece = self.tokenizer.id_to_token(int(token_id))
        if piece is None or self.is_special(token_id):
            return b""
        if self.kind == "byte_level":
            table = self._byte_chars
            if all(ch in table for ch in piece):
                return bytes(table[ch] for ch in piece)
            return piece.encode("utf-8")
        match = _BYTE_PIECE.match(piece)
        if match:
            return bytes([int(match.group(1), 16)])
        if self.kind == "wordpiece":
            return piece[2:].encode("utf-8") if piece.startswith("##") else piece.encode("utf-8")
        return piece.replace("▁", " ").encode("utf-8")

    def display(self, token_id: int) -> str:
        """How one vocabulary entry is shown: visible spaces/newlines, raw bytes as <0xNN>."""
        token_id = int(token_id)
        piece = self.tokenizer.id_to_token(token_id)
        if piece is None:
            return f"<id {token_id}>"
        if self.is_special(token_id):
            return piece
        if self.kind == "wordpiece":
            return visible(piece)
        return bytes_to_display(self.token_bytes(token_id))

    def encode(self, text: str) -> Tokens:
        """Tokenize any text (empty, huge, emoji, broken surrogates). A model's tokenizer (one that knows
        its `context`) refuses a text too long to fit before tokenizing it, and gives up on a text that
        its patterns take far too long over; a failure inside the library is a TokenizerError."""
        source = sanitize(text)
        if self.context is not None:
            self._check_length(source)
        encoding = self._encode(source)
        ids, spans = encoding.ids, encoding.offsets
        if self.add_bos and self.bos_id is not None and (not ids or ids[0] != self.bos_id):
            ids, spans = [self.bos_id] + ids, [(0, 0)] + spans
        shown = [self._shown(i) for i in ids]
        return Tokens(
            ids=np.asarray(ids, dtype=np.int64),
            text=tuple(text for text, _ in shown),
            spans=tuple(spans),
            special=np.fromiter((self.is_special(i) for i in ids), dtype=bool, count=len(ids)),
            raw=tuple(raw for _, raw in shown),
            source=source,
        )

    def _encode(self, source: str):
        """The library's encoding, with its panics as TokenizerError; bounded in time for a model's tokenizer.
        stderr is held by this (the calling) thread, so that it is given back the moment a call is given up on."""
        def library_call():
            return self.tokenizer.encode(source, add_special_tokens=True)

        try:
            with rust_panics_off_stderr():
                if self.context is None:
                    return library_call()
                return bounded_call(library_call, ENCODE_SECONDS + ENCODE_SECONDS_PER_CHAR * len(source),
                                    f"{self.source} took too long to tokenize a text of {len(source):,} characters")
        except TokenizerError:
            raise
        except BaseException as error:  # noqa: B036 -- a Rust panic is a BaseException (pyo3 PanicException)
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            raise TokenizerError(f"{self.source} failed on the text ({first_line(error)}).") from None

    def _check_length(self, source: str) -> None:
        """No token covers more characters than its piece has (times two for normalizers that join
        characters), so a text longer than the context times that cannot fit; past ALWAYS_TOKENIZED_CHARS
        it is not tokenized."""
        longest = self.longest_piece()[0]
        limit = max(self.context * 2 * (longest + 1), ALWAYS_TOKENIZED_CHARS)
        if len(source) > limit:
            raise ContextOverflowError(
                f"the prompt has {len(source):,} characters; with tokens of at most {longest} characters "
                f"it cannot fit the model's context of {self.context:,} tokens.")

    def longest_piece(self) -> tuple[int, int]:
        """(characters, UTF-8 bytes) of the longest vocabulary entries, added tokens included; asked of the
        library once (a loader checks it against the cap every vocabulary keeps, the prompt's bound reads it)."""
        if self._longest_piece is None:
            pieces = self.tokenizer.get_vocab(with_added_tokens=True)
            characters = max(map(len, pieces), default=1)
            # only a piece of more than a quarter of the byte length can be the longest in bytes (4 bytes a character)
            wide = (len(p.encode("utf-8", "surrogatepass")) for p in pieces if 4 * len(p) >= characters)
            self._longest_piece = (characters, max(wide, default=characters))
        return self._longest_piece

    def _shown(self, token_id: int) -> tuple[str, bytes]:
        """(display, bytes) of one vocabulary entry, worked out once: a pasted book repeats a few
        thousand distinct tokens tens of thousands of times."""
        known = self._shown_cache.get(token_id)
        if known is None:
            known = self._shown_cache[token_id] = (self.display(token_id), self.token_bytes(token_id))
        return known

    def decode(self, ids) -> str:
        """The text of a sequence of ids, special tokens included."""
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)
