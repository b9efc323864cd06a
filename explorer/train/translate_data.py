"""Generated EN<->ZH pairs whose word order differs: dates and numbers, plus their tokenizer.

    dates    "March 5, 2024"                  <->  "2024年3月5日"
    numbers  "twelve thousand three hundred"  <->  "一万二千三百"

English groups digits by 10^3 (thousand, million), Chinese by 10^4 (万), so
"twelve thousand" becomes 一万二千: one English word feeds two Chinese
groups, and the alignment is not monotonic. The direction is a task token at
the start of the source, "<2zh>" or "<2en>" (Johnson et al. 2017, Google's
multilingual NMT). No downloads: everything is generated from a seed.
"""
from __future__ import annotations

import calendar
import random
import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from explorer.core.encdec_decode import CJK, TO_EN, TO_ZH, task_token_for  # noqa: F401  (the decoder's rule)

PAD, BOS, EOS = "<pad>", "<s>", "</s>"
SPECIALS = [PAD, BOS, EOS, TO_ZH, TO_EN]
MONTHS = [calendar.month_name[m] for m in range(1, 13)]
YEARS = (1000, 2999)
HELD_OUT_MIN_DIGITS = 4
MAX_NUMBER = 999_999             # below 10^6: "thousand" (10^3) against 万 (10^4) is the reordering

ONES = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ZH_DIGITS = "零一二三四五六七八九"
ZH_PLACES = ((1000, "千"), (100, "百"), (10, "十"), (1, ""))
PIECES = r" ?[A-Za-z]+| ?[0-9]|[^A-Za-z0-9 ]| "          # a word, a digit, any other character


# ----- English -----------------------------------------------------------------------------
def english_below_thousand(n: int) -> str:
    words = []
    if n >= 100:
        words.append(f"{ONES[n // 100]} hundred")
        n %= 100
    if n >= 20:
        words.append(TENS[n // 10] + (f"-{ONES[n % 10]}" if n % 10 else ""))
    elif n:
        words.append(ONES[n])
    return " ".join(words)


def english_number(n: int) -> str:
    """American English without "and": 12300 -> "twelve thousand three hundred"."""
    if not 0 < n <= MAX_NUMBER:
        raise ValueError(f"{n} is outside 1..{MAX_NUMBER}")
    words = []
    for scale, name in ((1_000_000, " million"), (1000, " thousand"), (1, "")):
        group = n // scale % 1000
        if group:
            words.append(english_below_thousand(group) + name)
    return " ".join(words)


# ----- Chinese -----------------------------------------------------------------------------
def chinese_group(n: int, leading: bool) -> str:
    """0 < n < 10^4 with 千百十; one 零 for any run of inner zeros; 十 not 一十 at the start."""
    out, zero = "", False
    for place, unit in ZH_PLACES:
        digit = n // place % 10
        if digit == 0:
            zero = zero or bool(out)
            continue
        if zero:
            out, zero = out + "零", False
        if place == 10 and digit == 1 and leading and not out:
            out += "十"
        else:
            out += ZH_DIGITS[digit] + unit
    return out


def chinese_number(n: int) -> str:
    """12300 -> 一万二千三百, 10005 -> 一万零五, 150000 -> 十五万."""
    if not 0 < n <= MAX_NUMBER:
        raise ValueError(f"{n} is outside 1..{MAX_NUMBER}")
    high, low = divmod(n, 10_000)
    if not high:
        return chinese_group(low, leading=True)
    text = chinese_group(high, leading=True) + "万"
    if low:
        text += ("零" if low < 1000 else "") + chinese_group(low, leading=False)
    return text


# ----- examples ----------------------------------------------------------------------------
def english_date(year: int, month: int, day: int) -> str:
    return f"{MONTHS[month - 1]} {day}, {year}"


def chinese_date(year: int, month: int, day: int) -> str:
    return f"{year}年{month}月{day}日"


def random_date(rng: random.Random) -> tuple[str, str]:
    year, month = rng.randint(*YEARS), rng.randint(1, 12)
    day = rng.randint(1, calendar.monthrange(year, month)[1])
    return english_date(year, month, day), chinese_date(year, month, day)


def random_number(rng: random.Random, min_digits: int = 1) -> int:
    """A digit count uniform in min_digits..6, each digit zero with probability 0.35 (round numbers are common)."""
    length = rng.randint(min_digits, 6)
    digits = [rng.randint(1, 9)] + [0 if rng.random() < 0.35 else rng.randint(0, 9) for _ in range(length - 1)]
    return int("".join(map(str, digits)))


def random_pair(rng: random.Random, min_digits: int = 1) -> tuple[str, str]:
    """(source, target): a task token, then a date or a number in one direction."""
    if rng.random() < 0.4:
        english, chinese = random_date(rng)
    else:
        n = random_number(rng, min_digits)
        english, chinese = english_number(n), chinese_number(n)
    if rng.random() < 0.5:
        return f"{TO_ZH}{english}", chinese
    return f"{TO_EN}{chinese}", english


def held_out_pairs(count: int, seed: int = 12345) -> list[tuple[str, str]]:
    """A fixed sample that training never sees (its sources are excluded from the stream).

    Numbers in it have at least HELD_OUT_MIN_DIGITS digits: there are only 999
    numbers below 1000, and holding some out would leave whole words unseen.
    Those are checked exhaustively instead (`small_number_pairs`), as trained-on.
    """
    rng = random.Random(seed)
    pairs, seen = [], set()
    while len(pairs) < count:
        pair = random_pair(rng, HELD_OUT_MIN_DIGITS)
        if pair[0] not in seen:
            seen.add(pair[0])
            pairs.append(pair)
    return pairs


def small_number_pairs() -> list[tuple[str, str]]:
    """Every number from 1 to 999 in both directions (all of them occur in training)."""
    pairs = []
    for n in range(1, 1000):
        pairs += [(f"{TO_ZH}{english_number(n)}", chinese_number(n)),
                  (f"{TO_EN}{chinese_number(n)}", english_number(n))]
    return pairs


def training_pairs(seed: int, exclude: set[str]):
    """An endless stream of pairs whose sources are not in `exclude`."""
    rng = random.Random(seed)
    while True:
        pair = random_pair(rng)
        if pair[0] not in exclude:
            yield pair


# ----- tokenizer ---------------------------------------------------------------------------
def build_tokenizer(seed: int = 0, vocab_size: int = 256, samples: int = 20000) -> Tokenizer:
    """A BPE over characters: digits, Chinese characters and punctuation stay single tokens, English
    letters merge into words (with their leading space, as GPT-2 writes " thousand").

    Decoding concatenates the pieces, so it gives back the exact text; the five
    special tokens come first (ids 0..4).
    """
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(PIECES), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False)
    rng = random.Random(seed)
    texts = [text for _ in range(samples) for text in random_pair(rng)]
    tokenizer.train_from_iterator(texts, trainer=trainer)
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(pieces_of(tokenizer)), behavior="isolated")
    return tokenizer


def pieces_of(tokenizer: Tokenizer) -> str:
    """PIECES with "a letter" narrowed to the letters the vocabulary has.

    A BPE without an unknown token leaves out a character it has no piece for, and when that
    character sits inside a word ("The", and the vocabulary has no "T") it shifts the offsets of the
    rest of the word by one, so no one could tell which character went. A letter the vocabulary
    lacks is made a piece of its own: it is still left out, but the offsets stay exact and name it.
    Text made only of known letters is cut exactly as by PIECES.
    """
    vocabulary = tokenizer.get_vocab()
    known = "".join(ch for ch in string.ascii_letters if ch in vocabulary)
    return PIECES.replace("A-Za-z", known)
