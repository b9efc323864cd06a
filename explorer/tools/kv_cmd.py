"""`python -m explorer kv`: the model's KV cache under MHA, GQA, MQA and MLA, as a table or JSON.

Reads only the model's dimensions (config.json, or a GGUF file's metadata), so it
works for models no laptop holds, e.g. `--model resources/configs/deepseek-v2`.
"""
from __future__ import annotations

import json

from explorer.core import kv_variants as kv
from explorer.core.errors import ExplorerError
from explorer.core.loaders.config_file import read_config
from explorer.core.store import resolve
from explorer.core.units import human_bytes
from explorer.tools import arguments


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True,
                        help="catalog name, model folder, folder with only config.json, config.json file or .gguf file")
    parser.add_argument("--tokens", type=arguments.count(1), default=None,
                        help="context length for the totals (default: the model's context length)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "int8"), default="float32",
                        help="cache element type (default float32, what the engine computes in)")
    parser.add_argument("--rank", type=arguments.count(1), nargs="+", action="extend", default=None, metavar="R",
                        help="MLA latent ranks d_c to compare (default 2, 4 and 8 times d_h)")
    parser.add_argument("--block-size", type=arguments.count(1), default=kv.DEFAULT_BLOCK_SIZE,
                        help="tokens per block of the paged view of the native cache (default 16)")
    parser.add_argument("--json", action="store_true", help="print one JSON list, one object per variant")


def run(args) -> int:
    config, name = read_config(resolve(args.model))
    shape = kv.cache_shape(config, source=str(args.model))
    if args.tokens is not None and args.tokens < 0:
        raise ExplorerError(f"--tokens {args.tokens} must not be negative.")
    rows = kv.compare(shape, tokens=args.tokens, dtype=args.dtype, ranks=args.rank)
    if args.json:
        print(json.dumps([row.as_json() for row in rows]))
        return 0
    print(kv.format_table(shape, rows, name))
    print(_paged_summary(shape, rows, args.block_size))
    return 0


def _paged_summary(shape: kv.CacheShape, rows: list[kv.VariantRow], block_size: int) -> str:
    native = next(row for row in rows if row.variant.native)
    layout = kv.paged_layout(shape, native.variant, native.tokens, native.dtype, block_size)
    return (f"paged ({block_size}-token blocks): {int(layout.blocks_per_layer.sum())} blocks over "
            f"{shape.n_layers} layers, {human_bytes(int(layout.bytes_allocated.sum()))} allocated, "
            f"internal fragmentation {100 * layout.fragmentation:.2f}%")


