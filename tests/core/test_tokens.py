"""Tokens: ids, visible display strings, character spans and raw bytes, for any text at all."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from explorer.core.loaders.gguf_tokenizer import tokenizer_from_gguf
from explorer.core.tokens import TextTokenizer, byte_level_alphabet, bytes_to_display, sanitize, visible
from tests.core.tiny_checkpoints import CORPUS, byte_level_tokenizer, sentencepiece_vocab


@pytest.fixture(scope="module")
def byte_level() -> TextTokenizer:
    return TextTokenizer(byte_level_tokenizer())


@pytest.fixture(scope="module")
def sentencepiece() -> TextTokenizer:
    tokens, scores, types = sentencepiece_vocab()
    meta = {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.scores": scores,
            "tokenizer.ggml.token_type": types, "tokenizer.ggml.bos_token_id": 2, "tokenizer.ggml.eos_token_id": 1,
            "tokenizer.ggml.unknown_token_id": 3, "tokenizer.ggml.add_space_prefix": False}
    return tokenizer_from_gguf(meta, "test.gguf")


@pytest.fixture(scope="module")
def wordpiece() -> TextTokenizer:
    """A BERT-style tokenizer whose tokenizer.json pads to 128 and truncates, like all-MiniLM's."""
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer.train_from_iterator(CORPUS * 3, trainers.WordPieceTrainer(vocab_size=200, special_tokens=special,
                                                                        show_progress=False))
    from tokenizers.processors import TemplateProcessing

    tokenizer.post_processor = TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[
        ("[CLS]", tokenizer.token_to_id("[CLS]")), ("[SEP]", tokenizer.token_to_id("[SEP]"))])
    tokenizer.enable_padding(length=128, pad_token="[PAD]", pad_id=0)
    tokenizer.enable_truncation(max_length=16)
    return TextTokenizer(tokenizer)


def test_visible_whitespace_and_controls():
    assert visible("a b\nc\td\r\x00\x7f") == "a␣b↵c⇥d␍␀␡"
    assert bytes_to_display("é".encode()) == "é"
    assert bytes_to_display(b"\xe2\x80") == "<0xE2><0x80>"
    assert bytes_to_display(b" \xf0\x9f") == "␣<0xF0><0x9F>"


@pytest.mark.parametrize("text, shown", [
    ("\ufe0f", "<U+FE0F>"),                 # the variation selector after ❤ (drive29: an empty token cell)
    ("\u200d👩", "<U+200D>👩"),              # a zero-width joiner inside a family emoji
    ("日本\u3000", "日本<U+3000>"),           # an ideographic space
    ("x\u00a0y", "x<U+00A0>y"),
    ("e\u0301", "e\u0301"),                 # a combining mark draws on its letter: kept
    ("東京", "東京"), ("🍕", "🍕"),
])
def test_a_character_that_draws_nothing_is_named_by_its_code_point(text, shown):
    assert visible(text) == shown
    assert bytes_to_display(text.encode("utf-8")) == shown


def test_byte_level_alphabet_is_gpt2s():
    table = byte_level_alphabet()
    assert len(table) == 256 and sorted(table.values()) == list(range(256))
    assert table["Ġ"] == 0x20 and table["Ċ"] == 0x0A and table["A"] == 0x41


def test_byte_level_display_spans_and_bytes(byte_level):
    text = "The capital\nof France 😀"
    tokens = byte_level.encode(text)
    assert len(tokens) == len(tokens.ids) == len(tokens.text) == len(tokens.spans) == len(tokens.raw)
    assert tokens.ids.dtype == np.int64
    assert "".join(tokens.text).replace("␣", " ").replace("↵", "\n").startswith("The capital\nof France")
    assert not any("Ġ" in t or "Ċ" in t for t in tokens.text)
    assert b"".join(tokens.raw) == text.encode()
    for (start, end), raw in zip(tokens.spans, tokens.raw):
        piece = text[start:end]
        assert raw.decode(errors="ignore") in piece or piece.encode() in raw or raw in piece.encode()
    assert byte_level.decode(tokens.ids) == text


def test_special_tokens_are_flagged_and_have_no_bytes(byte_level):
    tokens = byte_level.encode("hi<|endoftext|>there")
    index = tokens.text.index("<|endoftext|>")
    assert tokens.special[index] and tokens.raw[index] == b""
    assert tokens.special.sum() == 1
    assert byte_level.eos_id == 0 and byte_level.is_special(0)


def test_add_bos_prepends_once(sentencepiece):
    tokens = sentencepiece.encode("hello")
    assert tokens.ids[0] == 2 and tokens.spans[0] == (0, 0) and tokens.special[0]
    assert sentencepiece.encode("").ids.tolist() == [2]


def test_sentencepiece_byte_fallback_shows_bytes(sentencepiece):
    tokens = sentencepiece.encode("hello 東")
    assert tokens.text[1:] == ("hello", "␣", "<0xE6>", "<0x9D>", "<0xB1>")
    assert b"".join(tokens.raw) == "hello 東".encode()
    assert tokens.spans[-1] == (6, 7)


def test_wordpiece_padding_and_truncation_are_off(wordpiece):
    text = " ".join(["the capital of france is paris"] * 10)
    tokens = wordpiece.encode(text)
    assert len(tokens) > 16 and "[PAD]" not in tokens.text
    assert tokens.text[0] == "[CLS]" and tokens.text[-1] == "[SEP]"
    assert tokens.special[0] and tokens.special[-1] and not tokens.special[1:-1].any()
    for shown, raw in zip(tokens.text, tokens.raw):
        assert not raw.startswith(b"##") and (raw.decode() == shown.removeprefix("##") or shown.startswith("["))
    assert wordpiece.vocab_size == wordpiece.tokenizer.get_vocab_size(with_added_tokens=True)


def test_lone_surrogates_are_replaced_in_place(byte_level):
    assert sanitize("a\ud800b\udfff") == "a\ufffdb\ufffd"
    tokens = byte_level.encode("x\ud83dy")
    assert b"".join(tokens.raw) == "x\ufffdy".encode() and tokens.spans[-1][1] == 3


def test_empty_and_huge_text(byte_level, sentencepiece):
    assert len(byte_level.encode("")) == 0
    text = ("Ünïcödé 😀 text, " * 6000)[:100_000]
    tokens = byte_level.encode(text)
    assert b"".join(tokens.raw) == text.encode()
    assert tokens.spans[-1][1] == len(text)
    assert len(sentencepiece.encode(text)) > 1000


def test_display_of_every_vocabulary_entry(byte_level, sentencepiece):
    for tokenizer in (byte_level, sentencepiece):
        shown = [tokenizer.display(i) for i in range(tokenizer.vocab_size)]
        assert all(isinstance(s, str) and s for s in shown)
        assert not any(" " in s or "\n" in s for s in shown)
    assert byte_level.display(10_000) == "<id 10000>"


UNICODE = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
                  max_size=200)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=UNICODE)
def test_any_unicode_tokenizes_without_crashing(byte_level, sentencepiece, wordpiece, text):
    clean = sanitize(text)
    for tokenizer in (byte_level, sentencepiece, wordpiece):
        tokens = tokenizer.encode(text)
        assert tokens.source == clean
        assert all(0 <= start <= end <= len(clean) for start, end in tokens.spans)
        assert all(isinstance(t, str) for t in tokens.text)
        starts = [start for (start, _), special in zip(tokens.spans, tokens.special) if not special]
        assert starts == sorted(starts)
    for tokenizer in (byte_level, sentencepiece):
        assert as_bytes(tokenizer.encode(text), clean) == clean.encode()


def as_bytes(tokens, clean: str) -> bytes:
    """The text again from its tokens: each ordinary token's bytes, and the text a special one matched (a typed
    "<|endoftext|>" is that token, as in transformers; its own bytes are b"")."""
    return b"".join(clean[start:end].encode() if special else raw
                    for raw, (start, end), special in zip(tokens.raw, tokens.spans, tokens.special))


def test_a_typed_special_token_is_that_token_and_keeps_its_text(byte_level):
    """Hypothesis found it (its examples include the test modules' strings): "<|endoftext|>" in a prompt."""
    text = "a<|endoftext|>b"
    tokens = byte_level.encode(text)
    assert list(tokens.special).count(True) == 1 and as_bytes(tokens, text) == text.encode()
