"""The logit lens and Show the work at a long prompt: what each costs, and on which thread.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_long_views.py [--model smollm2-135m]
        [--tokens 8000] [--skip-lens] [--json out.json]

The prompt is the README's text repeated to --tokens tokens, prefilled with full recording (maps rebuilt
on demand from Q and K). Then:
  lens_first_ms   the first Decoder.logit_lens (position 1), torch's start-up included
  lens_ms         Decoder.logit_lens at three positions (the model thread's work for the Next-token panel's
                  "Logit lens for this position"): each, ms; --skip-lens leaves it out (a slow engine)
  derive_ms       explorer.core.derivation.derive_cell for three cells: each, ms
  stream_ms       attribution.residual_stream (the Residual stream panel's job) at the three positions, each, ms:
                  "prefix" re-runs the prompt up to p (the job before it was lent the decoder), "cache" feeds p
                  alone against the decoder's KV cache (what the model thread does now)
  walk_ms         block_walk.walk_block (Show the work for a block) at the three cells, the same two ways
  panel_ms        the Show-the-work panel at 1366 x 768, a token selected -> its redraw and repaint on the GUI
                  thread: wall ms and the GUI thread's own CPU ms (a shared machine inflates wall time)
The load average is recorded with the figures: on a shared machine it says how far to trust them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def long_ids(model, tokens: int):
    import numpy as np

    ids = model.encode((ROOT / "README.md").read_text(encoding="utf-8"))
    return np.resize(ids, tokens)                         # the text again and again, cut at `tokens`


def timed_ms(work) -> tuple[float, float]:
    """(wall ms, this thread's CPU ms) of work()."""
    wall, cpu = time.perf_counter(), time.thread_time()
    work()
    return (time.perf_counter() - wall) * 1000.0, (time.thread_time() - cpu) * 1000.0


def panel_ms(app, trace, picks) -> list[dict]:
    from explorer.app.panels.derivation import DerivationPanel
    from explorer.app.state.session import Session

    session = Session()
    panel = DerivationPanel(session)
    panel.resize(1366, 768)
    panel.show()
    session.set_trace(trace)
    app.processEvents()
    out = []
    for layer, head, position in picks:
        def redraw() -> None:
            session.select(layer=layer, head=head, token=position)
            panel.repaint()
        wall, cpu = timed_ms(redraw)
        out.append({"layer": layer, "head": head, "position": position, "wall_ms": round(wall, 1),
                    "gui_cpu_ms": round(cpu, 1)})
    panel.close()
    panel.deleteLater()                                   # gone before the QApplication (else exit crashes)
    app.processEvents()
    return out


def one_row_ms(model, decoder, ids, picks) -> dict:
    """The residual stream and the block walk at each pick's position: the prefix run, then the cache's row."""
    from explorer.core.attribution import residual_stream
    from explorer.core.block_walk import walk_block

    loaded, out = model.loaded, {"stream_ms": {}, "walk_ms": {}}
    for way, lent in (("prefix", None), ("cache", decoder)):
        out["stream_ms"][way] = [round(timed_ms(lambda p=p: residual_stream(loaded, ids, p, 5, decoder=lent))[0], 1)
                                 for _, _, p in picks]
        out["walk_ms"][way] = [round(timed_ms(lambda c=c: walk_block(loaded, ids, c[0], c[2], decoder=lent))[0], 1)
                               for c in picks]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--tokens", type=int, default=8000)
    parser.add_argument("--skip-lens", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    import explorer
    from explorer.core import derivation

    app = QApplication.instance() or QApplication([])
    model = explorer.load(args.model)
    ids = long_ids(model, args.tokens)
    start = time.perf_counter()
    run = model.run(ids)
    prefill_s = time.perf_counter() - start
    trace, info, t = run.trace, run.trace.model, args.tokens
    positions = (t // 2, t - 1, 100)
    picks = [((3 * i + 1) % info.n_layers, (2 * i + 1) % info.n_heads, p) for i, p in enumerate(positions)]
    report = {"model": args.model, "tokens": t, "prefill_s": round(prefill_s, 1), "load_avg": os.getloadavg()}
    if not args.skip_lens:
        report["lens_first_ms"] = round(timed_ms(lambda: run.decoder.logit_lens(1, 5))[0], 1)   # torch warms up
        report["lens_ms"] = [round(timed_ms(lambda p=p: run.decoder.logit_lens(p, 5))[0], 1) for p in positions]
    report.update(one_row_ms(model, run.decoder, ids, picks))
    report["derive_ms"] = [round(timed_ms(lambda c=c: derivation.derive_cell(trace, c[0], c[1], c[2], c[2] // 2))[0], 1)
                           for c in picks]
    report["panel_ms"] = panel_ms(app, trace, picks)
    report["load_avg_after"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
