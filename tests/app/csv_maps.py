"""Reading back an attention map's CSV (drawing.export.attention_csv) with nothing but Python's csv module: a
header row of key tokens, then a row per query token (after the head's index, where heads are stacked)."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def read_map(path: Path) -> tuple[np.ndarray, list[str], list[str]]:
    """(values, query tokens, key tokens): values (T_q, T_kv), or (heads·T_q, T_kv) stacked head after head
    (query tokens then repeat once per head)."""
    with open(path, newline="", encoding="utf-8") as stream:
        header, *rows = list(csv.reader(stream))
    skip = 2 if header[0] == "head" else 1
    values = np.array([[float(cell) for cell in row[skip:]] for row in rows], dtype=np.float64)
    return values, [row[skip - 1] for row in rows], header[skip:]
