"""The typed schema of a session file: every field is checked for type, range and depth before it is used.

A session file comes from anywhere (an old autosave, a hand edit, a mail attachment), so it is
read the way a careful parser reads a header: each field has one expected type and range, and
the first field that is not so is named in one sentence with the file ("s.json: field steps
is '3', not a whole number."; sampling values by Sampling's own rule: "s.json: sampling temperature=nan
is not legal: it must be a finite number, 0 or more (0 is greedy)."). Nothing is converted silently: a
string where a number belongs, a float layer, a NaN temperature or a lone surrogate in the
prompt is refused here, not later in a replay.
"""
from __future__ import annotations

import math

from explorer.core.sampling_settings import RULES as SAMPLING_RULES
from explorer.core.sampling_settings import Sampling, SamplingError

MAX_ID = 2**31 - 1            # token ids and positions; a vocabulary is far smaller
MAX_STEPS = 10_000_000
DTYPES = ("float32", "bfloat16", "float16")
# The integer fields of an intervention (core.intervention_parts), none negative (a -1 layer would index from
# the end), and the ones that may be None (no upper end).
INTERVENTION_INTS = ("layer", "head", "query", "key", "first_layer", "last_layer", "low", "high")
INTERVENTION_NULLABLE = ("last_layer", "high")
INTERVENTION_INT_LISTS = ("layers", "positions")
INTERVENTION_FLOATS = ("temperature",)
INTERVENTION_STRINGS = ("mode", "where", "name", "type")
MAX_DEPTH = 6                 # experiments -> intervention -> kernels -> choice -> kernel -> value


class SchemaError(ValueError):
    """One field of a session body breaks the schema; its message names the field (not the file)."""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def text(value, name: str, allow_none: bool = False) -> str | None:
    """A string that is valid Unicode (JSON may carry a lone surrogate, which no file or widget can hold)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise SchemaError(f"field {name} is {_shown(value)}, not a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise SchemaError(f"field {name} holds a character that is not valid Unicode "
                          f"(a lone surrogate at position {error.start})") from None
    return value


def integer(value, name: str, low: int = 0, high: int = MAX_ID) -> int:
    if not _is_int(value):
        raise SchemaError(f"field {name} is {_shown(value)}, not a whole number")
    if not low <= value <= high:
        raise SchemaError(f"field {name} is {value}, not between {low} and {high}")
    return value


def finite(value, name: str, low: float = -math.inf, high: float = math.inf, open_low: bool = False) -> float:
    if not (_is_int(value) or isinstance(value, float)) or not math.isfinite(value):
        raise SchemaError(f"field {name} is {_shown(value)}, not a finite number")
    if value < low or value > high or (open_low and value == low):
        bound = f"above {low:g}" if open_low else f"at least {low:g}"
        upper = f" and at most {high:g}" if high < math.inf else ""
        raise SchemaError(f"field {name} is {value:g}, not {bound}{upper}")
    return float(value)


def integers(value, name: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise SchemaError(f"field {name} is {_shown(value)}, not a list of whole numbers")
    return tuple(integer(item, f"{name}[{index}]") for index, item in enumerate(value))


def pairs(value, name: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, list):
        raise SchemaError(f"field {name} is {_shown(value)}, not a list of [step, token] pairs")
    found = []
    for index, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2:
            raise SchemaError(f"field {name}[{index}] is {_shown(pair)}, not a [step, token] pair")
        found.append((integer(pair[0], f"{name}[{index}][0]", high=MAX_STEPS), integer(pair[1], f"{name}[{index}][1]")))
    return tuple(found)


def decoded(value, steps: int, forced: tuple[tuple[int, int], ...], name: str = "decoded") -> tuple[int, ...]:
    """The id chosen after each step, sampled or forced: one per step, the forced ones among them. Absent (None:
    a file written before they were saved) is no ids, and the replay samples its steps again as it did then."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SchemaError(f"field {name} is {_shown(value)}, not a list of token ids")
    if len(value) != steps:         # checked before the items: a mismatch is named as one, whatever they hold
        raise SchemaError(f"field {name} holds {len(value):,} token ids for {steps:,} steps, not one per step")
    ids = integers(value, name)
    for index, (step, token) in enumerate(forced):
        if step < steps and ids[step] != token:
            raise SchemaError(f"field forced[{index}] forces token {token} at step {step}, "
                              f"but field {name}[{step}] is {ids[step]}")
    return ids


def flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(f"field {name} is {_shown(value)}, not true or false")
    return value


def choice(value, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed or not isinstance(value, str):
        raise SchemaError(f"field {name} is {_shown(value)}, not one of {', '.join(allowed)}")
    return value


def sampling(value, name: str = "sampling") -> dict:
    """The sampling settings as Sampling.from_dict takes them, checked by Sampling's own rule (the one the
    API and the CLI use: transformers refuses a NaN, negative or infinite temperature too); a value of
    the wrong type is refused as it is, never converted."""
    if not isinstance(value, dict):
        raise SchemaError(f"field {name} is {_shown(value)}, not an object")
    try:
        return Sampling(**{field: value[field] for field in SAMPLING_RULES if field in value}).as_dict()
    except SamplingError as error:
        raise SchemaError(str(error).rstrip(".")) from None


def experiments(value, name: str = "experiments") -> list:
    """The experiments' JSON, its values checked by field name before Experiment.from_json builds them."""
    if not isinstance(value, list):
        raise SchemaError(f"field {name} is {_shown(value)}, not a list")
    for index, item in enumerate(value):
        _check_intervention_value(item, f"{name}[{index}]", 1)
    return value


def _check_intervention_value(value, name: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise SchemaError(f"field {name} is nested deeper than an experiment can be")
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_intervention_value(item, f"{name}[{index}]", depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_field(key, item, f"{name}.{key}", depth)
    elif isinstance(value, float) and not math.isfinite(value):
        raise SchemaError(f"field {name} is {value}, not a finite number")
    elif isinstance(value, str):
        text(value, name)


def _check_field(key: str, item, name: str, depth: int) -> None:
    if key in INTERVENTION_INTS:
        if item is not None or key not in INTERVENTION_NULLABLE:
            integer(item, name)
    elif key in INTERVENTION_INT_LISTS:
        if item is not None:
            integers(item, name)
    elif key in INTERVENTION_FLOATS:
        finite(item, name, low=0.0, open_low=True)
    elif key in INTERVENTION_STRINGS:
        text(item, name)
    elif key == "on":
        if not isinstance(item, bool):
            raise SchemaError(f"field {name} is {_shown(item)}, not true or false")
    else:
        _check_intervention_value(item, name, depth + 1)


def _shown(value) -> str:
    """A value as the message shows it: short, one line (a 10 MB string is not echoed)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (dict, list)):
        shown = "an object" if isinstance(value, dict) else "a list"
    else:
        shown = repr(value)
    shown = shown.encode("ascii", "backslashreplace").decode("ascii")
    return shown if len(shown) <= 40 else shown[:37] + "..."
