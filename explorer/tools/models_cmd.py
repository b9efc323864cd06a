"""`models`: list every model the explorer can open (and the ones it cannot, with the reason); with
`--store`, what the model store holds and how much space each part takes; `--clear-copies` and
`--remove NAME` free it."""
from __future__ import annotations

import json
from pathlib import Path

from explorer.core import store
from explorer.core.units import human_bytes, human_count


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON list, one object per model")
    parser.add_argument("--available", action="store_true", help="only the models that can be opened now")
    parser.add_argument("--store", action="store_true",
                        help="what the model store holds: each pulled model's files and the copies its first load made")
    parser.add_argument("--clear-copies", action="store_true",
                        help="delete the copies first loads wrote into the store, a GGUF model's float32 weights "
                             "and its tokenizer (made again when needed)")
    parser.add_argument("--remove", metavar="NAME", help="delete a pulled model from the store")


def as_dict(entry: store.ModelEntry) -> dict:
    summary = entry.summary
    row = {"name": entry.name, "source": entry.source, "path": str(entry.path) if entry.path else None,
           "available": entry.available, "reason": entry.reason, "license": entry.license,
           "variant": entry.variant or None}
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
    variant = f" ({entry.variant})" if entry.variant else ""
    if s is None:
        return f"  {name_cell(entry)} {entry.source:<9} --{variant} {entry.reason}"
    heads = f"{s.heads}/{s.kv_heads}"
    mark = "  " if entry.available else "✗ "
    return (f"{mark}{name_cell(entry)} {entry.source:<9} {s.family:<{family_width}} {s.attention:<4} "
            f"{s.layers:>3} {heads:>7} {human_count(s.params):>7} {human_bytes(s.size_bytes):>9}  {entry.path}{variant}"
            + (f"\n      unsupported: {entry.reason}" if entry.reason else ""))


def run(args) -> int:
    if args.remove:
        print(f"removed {store.remove_model(args.remove)}")
        return 0
    if args.clear_copies:
        print(f"freed {human_bytes(store.clear_copies())} ({store.home()})")
        return 0
    if args.store:
        return print_store(args.json)
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


def print_store(as_json: bool) -> int:
    """Each pulled model's folder: its own files and the copies first loads made, with their sizes."""
    held = store.stored_models()
    if as_json:
        print(json.dumps([{"name": m.name, "folder": str(m.folder), "model_bytes": m.model_bytes,
                           "copy_bytes": m.copy_bytes, "copies": [str(p) for p in m.copies]} for m in held], indent=1))
        return 0
    print(f"model store: {store.home()}")
    for model in held:
        print(f"  {model.name:<16} {human_bytes(model.model_bytes):>10} model files   {model.folder}")
        for copy in model.copies:
            print(f"  {'':<16} {human_bytes(copy.stat().st_size):>10} made by its first load: {copy.name}")
    total = sum(m.model_bytes + m.copy_bytes for m in held)
    copies = sum(m.copy_bytes for m in held)
    print(f"  {'total':<16} {human_bytes(total):>10}"
          + (f" ({human_bytes(copies)} of copies: --clear-copies deletes them)" if copies else ""))
    return 0
