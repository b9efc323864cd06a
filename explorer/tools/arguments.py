"""Types of the CLI's arguments: each checks type and range, so a bad value is one sentence and exit 2.

argparse calls these on the text given; an `ArgumentTypeError` becomes
"error: argument --steps: -1 is below 0 ..." (one line, see cli.OneLineParser).
Sampling values (--temperature, --top-k, --top-p, --seed) are only read as numbers here: their ranges
have one rule, `Sampling`'s own (explorer/core/sampling_settings.py), which the API and session files
use too; `trace` builds its Sampling before a model loads, and a refusal there is exit 2 as well.
"""
from __future__ import annotations

import argparse
import math

from explorer.core import device_names
from explorer.core.sampling_settings import MAX_SEED
from explorer.core.units import MAX_COUNT


def count(low: int = 0, high: int = MAX_COUNT):
    """A whole number in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text} is not between {low:,} and {high:,}")
        return value
    parse.__name__ = "whole number"
    return parse


def number(low: float = -math.inf, high: float = math.inf, above: bool = False):
    """A finite number in [low, high] (or (low, high] when `above`)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not a finite number")
        if value < low or value > high or (above and value == low):
            lower = f"above {low:g}" if above else f"at least {low:g}"
            upper = f" and at most {high:g}" if math.isfinite(high) else ""
            raise argparse.ArgumentTypeError(f"{text} must be {lower}{upper}")
        return value
    parse.__name__ = "number"
    return parse


def text(given: str) -> str:
    """Text the model is to read, refused if the command line gave bytes that are not UTF-8: Python keeps each
    as a lone surrogate (PEP 383), which the tokenizer would silently read as U+FFFD."""
    try:
        given.encode("utf-8")
    except UnicodeEncodeError as error:
        raw = given.encode("utf-8", "surrogateescape")
        byte = given[error.start].encode("utf-8", "surrogateescape")
        shown = raw.decode("utf-8", "backslashreplace")
        raise argparse.ArgumentTypeError(f"'{shown}' is not UTF-8 text (byte 0x{byte[0]:02x} at character "
                                         f"{error.start + 1}); give the text in UTF-8") from None
    return given


text.__name__ = "text"
seed = count(0, MAX_SEED)      # a seed of random ids or initial weights (heads, train); trace's is sampling_number
steps = count(0)


def sampling_number(text: str) -> int | float:
    """A sampling value as written: whole if it reads as a whole number (so that Sampling refuses a top_k
    of 1.5 rather than have it rounded), else a float; text that is no number at all is refused here."""
    try:
        return int(text, 10)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if math.isinf(value) and "inf" not in text.lower():        # 1e400: Sampling would say "inf", not what was typed
        raise argparse.ArgumentTypeError(f"{text} is past the largest number a float holds")
    return value


sampling_number.__name__ = "number"


def device(text: str) -> str:
    """cpu, cuda, cuda:N, mps or auto: the devices a model can compute on (core.device_names)."""
    if not device_names.is_device(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device: use {device_names.NAMES}")
    return text
