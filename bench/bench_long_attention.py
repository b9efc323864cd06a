"""The attention panel at a long prompt: time from selecting a head to its painted map, and the all-heads
grid's total time, in an offscreen window.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_long_attention.py [--model smollm2-135m]
        [--tokens 8000] [--heads 6] [--json out.json]

The prompt is the README's text repeated to --tokens tokens, prefilled with full recording (maps rebuilt
on demand from Q and K). Then, with the panel shown at 1366 x 768:
  grid_s            set_trace to the grid's last tile (the first large head goes first; the grid waits)
  head_ms           selecting a head to its map painted (block maxima, computed in the background),
                    for --heads heads of other layers, the grid already filled: median and max
  head_while_grid_ms  the same while the grid is filling again (nothing kept)
  hover_ms          the exact A[i, j] under the pointer (one query row): median
  zoom_ms           a 512 x 512 window's exact cells: median
  dense_head_ms     (--dense) the dense map views.maps.attention_matrix builds, what the panel computed on
                    the GUI thread for every head it showed before it drew long maps as blocks
The load average is recorded with the figures: on a shared machine it says how far to trust them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def long_ids(model, tokens: int):
    import numpy as np

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    ids = model.encode(text)
    return np.resize(ids, tokens)                         # the text again and again, cut at `tokens`


def wait_for(app, signal, start_action, timeout_s: float = 600.0) -> float:
    """Seconds from start_action() until `signal` fires (events processed meanwhile)."""
    fired = []
    signal.connect(lambda *args: fired.append(time.perf_counter()))
    start = time.perf_counter()
    start_action()
    while not fired and time.perf_counter() - start < timeout_s:
        app.processEvents()
        time.sleep(0.001)
    signal.disconnect()
    if not fired:
        raise TimeoutError("no signal within the timeout")
    return fired[0] - start


def painted_head_ms(app, panel, layer: int, head: int) -> float:
    """Selecting (layer, head) until its map is computed, drawn into the image and the view repainted."""
    start = time.perf_counter()
    wait_for(app, panel.long_head.shown, lambda: panel.session.select(layer=layer, head=head))
    panel.large_view.viewport().repaint()
    app.processEvents()
    return (time.perf_counter() - start) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--tokens", type=int, default=8000)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--dense", action="store_true", help="also time one dense head, the former path")
    args = parser.parse_args()

    from PySide6.QtWidgets import QApplication

    import explorer
    from explorer.app.panels import AttentionPanel
    from explorer.app.state.session import Session
    from explorer.views.long_maps import block_maxima, exact_cell

    app = QApplication.instance() or QApplication([])
    model = explorer.load(args.model)
    ids = long_ids(model, args.tokens)
    start = time.perf_counter()
    trace = model.run(ids).trace
    prefill_s = time.perf_counter() - start

    session = Session()
    panel = AttentionPanel(session)
    panel.resize(1366, 768)
    panel.show()
    app.processEvents()
    info = trace.model
    grid_s = wait_for(app, panel.filler.finished, lambda: session.set_trace(trace))
    picks = [((3 * i + 1) % info.n_layers, (2 * i + 1) % info.n_heads) for i in range(args.heads)]
    head_ms = [painted_head_ms(app, panel, layer, head) for layer, head in picks]
    panel.filler.tiles.clear()                              # the same records as a new trace, nothing kept:
    panel.long_head.forget()                                # its grid fills while heads are selected
    session.set_trace(dataclasses.replace(trace))
    while_grid = [painted_head_ms(app, panel, layer, head) for layer, head in picks[:3]]
    panel.filler.cancel()
    hover = []
    for i in range(20):
        t0 = time.perf_counter()
        exact_cell(trace, 2, [1], (i * 397) % args.tokens, (i * 131) % args.tokens)
        hover.append((time.perf_counter() - t0) * 1000.0)
    zoom = []
    for i in range(3):
        r0 = args.tokens - 600 - 1000 * i
        t0 = time.perf_counter()
        block_maxima(trace, 2, [1], 1, window=(r0, r0 + 512, r0 - 256, r0 + 256))
        zoom.append((time.perf_counter() - t0) * 1000.0)
    dense = {}
    if args.dense:
        from explorer.views.maps import attention_matrix

        t0 = time.perf_counter()
        attention_matrix(trace, 2, 1)
        dense = {"dense_head_ms": round((time.perf_counter() - t0) * 1000.0)}
    result = {"model": args.model, "tokens": args.tokens, "layers": info.n_layers, "heads": info.n_heads,
              "prefill_s": round(prefill_s, 1), "grid_s": round(grid_s, 1),
              "head_ms_median": round(statistics.median(head_ms)), "head_ms_max": round(max(head_ms)),
              "head_while_grid_ms_median": round(statistics.median(while_grid)),
              "hover_ms_median": round(statistics.median(hover), 1), "zoom_ms_median": round(statistics.median(zoom)),
              **dense, "load_average": os.getloadavg()}
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
