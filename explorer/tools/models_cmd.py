"""`models`: list every model the explorer can open (and the ones it cannot, with the reason)."""
from __future__ import annotations

import json
from pathlib import Path

from explorer.core import store
from explorer.core.units import human_bytes, human_count


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON list, one object per model")
    parser.add_argument("--available", action="store_true", help="only the models that can be opened now")


def as_dict(entry: store.ModelEntry) -> dict:
    summary = entry.summary
    row = {"name": entry.name, "source": entry.source, "path": str(entry.path) if entry.path else None,
           "available": entry.available, "reason": entry.reason, "license": entry.license}
    if summary is not None:
        row.update(family=summary.family, attention=summary.attention, layers=summary.layers, heads=summary.heads,
                   kv_heads=summary.kv_heads, params=summary.params, size_bytes=summary.size_bytes,
                   format=summary.format)
    return row


NAME_WIDTH = 28


def name_cell(entry: store.ModelEntry) -> str:
    """The NAME column, exactly NAME_WIDTH wide: a path's last part (the full path is under LOCATION),
    shortened in the middle with '…' when it is longer."""
    name = Path(entry.name).name if entry.source == "recent" else entry.name
    if len(name) > NAME_WIDTH:
        head = (NAME_WIDTH - 1) // 2
        name = name[:head] + "…" + name[len(name) - (NAME_WIDTH - 1 - head):]
    return f"{name:<{NAME_WIDTH}}"


def as_line(entry: store.ModelEntry, family_width: int = 12) -> str:
    s = entry.summary
    if s is None:
        return f"  {name_cell(entry)} {entry.source:<9} -- {entry.reason}"
    heads = f"{s.heads}/{s.kv_heads}"
    return (f"{'  ' if entry.available else '✗ '}{name_cell(entry)} {entry.source:<9} {s.family:<{family_width}} {s.attention:<4} "
            f"{s.layers:>3} {heads:>7} {human_count(s.params):>7} {human_bytes(s.size_bytes):>9}  {entry.path}"
            + (f"\n      unsupported: {entry.reason}" if entry.reason else ""))


def run(args) -> int:
    entries = store.catalog()
    if args.available:
        entries = [e for e in entries if e.available]
    if args.json:
        print(json.dumps([as_dict(e) for e in entries], indent=1))
        return 0
    family = max([12] + [len(e.summary.family) for e in entries if e.summary is not None])   # the widest family
    print(f"  {'NAME':<{NAME_WIDTH}} {'SOURCE':<9} {'FAMILY':<{family}} {'ATTN':<4} {'LAY':>3} {'HEADS':>7} "
          f"{'PARAMS':>7} {'SIZE':>9}  LOCATION")
    for entry in entries:
        print(as_line(entry, family))
    return 0
