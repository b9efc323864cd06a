"""`python -m explorer export`: decode a prompt and write an attention map without a window.

The same figures and files as the app's export menu: one head, all heads of a
layer (`--head all`) or the full grid (`--layer all`), as PNG, SVG, CSV or .npy,
with the labels at the app's export text sizes (`--text-size 1|1.5|2`, views.figure_text).
With an encoder-decoder, `--prompt` is the source and `--attention` picks the
encoder's self-attention, the decoder's (the default) or the cross-attention.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from explorer.core import files
from explorer.core.errors import ExplorerError
from explorer.tools import arguments
from explorer.views.figure_text import TEXT_SIZES, text_scale
from explorer.views.image_limits import MIN_SIDE, check_image_size


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="model folder, .gguf file or catalog name")
    parser.add_argument("--prompt", type=arguments.text, required=True, help="the text to run")
    parser.add_argument("--steps", type=arguments.steps, default=0,
                        help="greedy decoding steps after the prefill (default 0)")
    parser.add_argument("--layer", default="0", help="layer index, or 'all' for the grid of every layer and head")
    parser.add_argument("--head", default="all", help="head index, or 'all' for every head of the layer")
    parser.add_argument("-o", "--output", required=True, help="FILE.png, FILE.svg, FILE.csv or FILE.npy")
    parser.add_argument("--size", default=None, help="image size in pixels, WIDTHxHEIGHT (default 1000x800; "
                                                     "the grid of --layer all: square tiles)")
    parser.add_argument("--at-step", type=arguments.steps, default=None,
                        help="draw the map as it was after this step (0 = the prefill; default: the last)")
    parser.add_argument("--scores", action="store_true", help="pre-softmax scores S instead of the weights A")
    parser.add_argument("--log", action="store_true", help="log10 colour scale for the weights")
    parser.add_argument("--every-step", action="store_true", help="write one numbered file per step")
    parser.add_argument("--text-size", default="1", metavar="|".join(s.option for s in TEXT_SIZES),
                        help="the labels' size for the image, as File ▸ Export Figure Text Size: 1 (default), "
                             "1.5 or 2 for a slide read from the back of a room")
    parser.add_argument("--dark", action="store_true",
                        help="light text on a dark background (default: a light, print-ready figure)")
    parser.add_argument("--attention", choices=("self", "cross", "encoder"), default="self",
                        help="encoder-decoders: decoder self-attention (default), cross-attention "
                             "[target x source] or the encoder's self-attention over the source")
    parser.add_argument("--device", type=arguments.device, default="cpu")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))


def _index(text: str, what: str) -> int | str:
    if text == "all":
        return "all"
    if not re.fullmatch(r"\d+", text):
        raise ExplorerError(f"--{what} {text!r} must be a number from 0 or 'all'.")
    return int(text)


def _size(text: str) -> tuple[int, int]:
    """WIDTHxHEIGHT within the limits every export has (views.image_limits)."""
    match = re.fullmatch(r"(\d{1,9})[x×](\d{1,9})", text.strip())
    if not match:
        raise ExplorerError(f"--size {text!r} must look like 1000x800, each side at least {MIN_SIDE} pixels.")
    return check_image_size(int(match.group(1)), int(match.group(2)))


def run(args) -> int:
    layer, head = _index(args.layer, "layer"), _index(args.head, "head")
    size = _size(args.size) if args.size is not None else None          # None: export.default_size
    scale = text_scale(args.text_size)                                   # before the slow model load
    if args.steps < 0:
        raise ExplorerError(f"--steps {args.steps} must not be negative.")
    output = Path(args.output)
    files.check_writable(output)                       # fail before Qt's import and the slow model load
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from explorer.drawing import export, figures  # Qt, imported once QT_QPA_PLATFORM is set and the output checked

    export.check_writable(output)
    export._suffix(output, export.IMAGE_SUFFIXES + export.DATA_SUFFIXES)
    trace = _decode(args)
    if args.at_step is not None and not 0 <= args.at_step < trace.n_steps:
        raise ExplorerError(f"--at-step {args.at_step} does not exist: the run has steps 0 to {trace.n_steps - 1}.")
    from PySide6.QtWidgets import QApplication  # Qt only for this command: --help imports every command module

    app = QApplication.instance() or QApplication(["transformer-explorer"])
    view = _view(trace, args.attention)
    # the titles and a CSV's header name the kind of an encoder-decoder's map, as the app's exports do
    options = dict(values="scores" if args.scores else "weights", log=args.log, size=size, cross=view.cross,
                   theme="dark" if args.dark else "light", text_scale=scale,
                   kind=figures.kind_option(trace.model, view.kind))
    if args.every_step:
        written = export.export_frames(view.trace, output, layer, head, **options)
    else:
        step = args.at_step if view.kind != "encoder" else None
        written = [export.export_attention(view.trace, output, layer, head, step=step, **options)]
    app.processEvents()
    for path in written:
        print(path)
    return 0


def _view(trace, kind: str):
    """The Trace that holds the attention asked for (trace_views); a kind the model lacks is an error."""
    from explorer.views import trace_views  # the trace's modules (9), not for --help, which imports every command

    if kind not in trace_views.kinds_of(trace.model):
        raise ExplorerError(f"--attention {kind} needs an encoder-decoder model; {trace.model.name} has "
                            "only self-attention.")
    return trace_views.view(trace, kind)


def _decode(args):
    from explorer.api import load  # at run, not at the top: --help imports every command module

    model = load(args.model, device=args.device, dtype=args.dtype)   # a path or a catalog name
    return model.run(args.prompt, steps=args.steps).trace
