"""The rules a config.json value is checked by, and the sizes past every published model: a value's kind and range
(`Rule`), whether one is legal (`legal`), the one sentence that refuses it (`refuse`), and a table of them checked
at once (`check_table`). Shared by config_schema (the families' config.json keys) and encdec_config (the
encoder-decoder's own keys), and free of the family table, so that both may read it. Torch-free.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from explorer.core.errors import InvalidConfigError


@dataclass(frozen=True)
class Rule:
    kind: str                       # "int" | "real" | "choice" | "bool"
    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False          # low itself is refused (a value must be > low)
    nullable: bool = False          # null means "not used" (no window, no softcap)
    choices: frozenset = frozenset()


def count(low: int = 1, nullable: bool = False, high: int = 1 << 20) -> Rule:
    return Rule("int", low=low, high=high, nullable=nullable)


def positive(nullable: bool = False, high: float = math.inf) -> Rule:
    return Rule("real", low=0.0, high=high, open_low=True, nullable=nullable)


# The highs are far past every published model (BOUNDS says which): a config beyond them is broken
# or hostile, and is refused before a per-layer table or a module is built from it.
LAYERS, WIDTH, HEADS, CONTEXT, VOCABULARY = 1024, 1 << 17, 1 << 12, 1 << 27, 1 << 23
TOKEN_ID = Rule("int", low=0, high=VOCABULARY, nullable=True)
def _kind_ok(rule: Rule, value) -> bool:
    if rule.kind == "bool":
        return isinstance(value, bool)
    if rule.kind == "choice":
        return isinstance(value, str) and value in rule.choices
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if rule.kind == "int":
        return isinstance(value, int) or (math.isfinite(value) and value == int(value))
    return math.isfinite(value)


def _in_range(rule: Rule, value) -> bool:
    if rule.kind in ("bool", "choice"):
        return True
    above = value > rule.low if rule.open_low else value >= rule.low
    return above and value <= rule.high


def legal(rule: Rule, value) -> str | None:
    """None if the value is legal, else what it must be."""
    if value is None and rule.nullable:
        return None
    if isinstance(value, list) and rule is TOKEN_ID:            # eos_token_id may list several ids
        return next((legal(rule, v) for v in value if legal(rule, v)), None)
    if _kind_ok(rule, value) and _in_range(rule, value):
        return None
    return _wanted(rule)


def _wanted(rule: Rule) -> str:
    if rule.kind == "choice":
        return f"one of {', '.join(sorted(rule.choices))}"
    if rule.kind == "bool":
        return "true or false"
    kind = "an integer" if rule.kind == "int" else "a finite number"
    shown = (lambda v: f"{int(v):,}") if rule.kind == "int" else (lambda v: f"{v:g}")
    low = f" > {shown(rule.low)}" if rule.open_low else f" >= {shown(rule.low)}" if rule.low > -math.inf else ""
    high = f" and <= {shown(rule.high)}" if rule.high < math.inf else ""
    return f"{kind}{low}{high}"


def refuse(key: str, value, wanted: str, names: dict) -> InvalidConfigError:
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return InvalidConfigError(f"{names.get(key, key)} = {shown[:60]} is not legal: it must be {wanted}.")


def check_table(config: dict, table: dict, names: dict, prefix: str = "") -> None:
    for key, rule in table.items():
        if key in config:
            wanted = legal(rule, config[key])
            if wanted is not None:
                raise refuse(prefix + key, config[key], wanted, names)
