"""The headless `export` command in a fresh interpreter, as a person runs it, on a synthetic trace.

`python -m tests.app.headless_export_probe OUT_DIR [export options...]` runs
explorer.tools.export_cmd.run with the model decode replaced by a synthetic trace (no
torch), writes attention.png and attention.svg into OUT_DIR, and records where each
figure's text lies (tests/app/text_contrast.label_rects) in OUT_DIR/rects.json.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from explorer import cli
from explorer.drawing import export
from explorer.tools import export_cmd
from tests.app.synthetic_trace import build_trace
from tests.app.text_contrast import label_rects


def main(argv: list[str]) -> int:
    out, options = Path(argv[0]), argv[1:]
    export_cmd._decode = lambda args: build_trace(n_layers=2, n_heads=3, prompt_len=7, steps=2)
    rects = {}
    save = export.save_figure

    def recording(figure, path, width, height):
        rects[Path(path).suffix] = label_rects(figure)
        return save(figure, path, width, height)

    export.save_figure = recording
    for suffix in (".png", ".svg"):
        argv_cli = ["export", "--model", "synthetic", "--prompt", "x", "--layer", "1", "--head", "2",
                    "-o", str(out / f"attention{suffix}"), "--size", "800x600", *options]
        if cli.main(argv_cli) != 0:
            return 1
    (out / "rects.json").write_text(json.dumps(rects))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
