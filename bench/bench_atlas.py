"""The head atlas at a long prompt: how long the description of the text (entropy, distance, first token
of every head) takes to read in the background, and whether the GUI stays free meanwhile.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_atlas.py [--model smollm2-135m] [--tokens 8000]
        [--json out.json]

The prompt is the README's text repeated to --tokens tokens, prefilled with full recording (maps rebuilt
on demand from Q and K). Then, with the atlas shown at 1366 x 768 on the entropy score:
  first_layer_s   set_trace to the first layer's row painted
  total_s         set_trace to the last layer's row painted
  set_trace_ms    the set_trace call itself on the GUI thread (the atlas's first, empty paint)
  gui_gap_ms      the longest the GUI thread stopped answering meanwhile (gaps of a 5 ms timer), its p99,
                  and when the longest began (s after set_trace)
  again_ms        a repaint once read (nothing is read again)
  peak_rss_mb     the process's peak resident memory, prefill included
The load average is recorded with the figures: on a shared machine it says how far to trust them.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_long_attention import long_ids  # noqa: E402  (the same prompt as the attention benchmark)


def read_atlas(app, panel, trace) -> dict:
    """set_trace, then process events until every layer is painted: the times and the longest GUI gap."""
    from PySide6.QtCore import QTimer

    ticks = [time.perf_counter()]
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    layers, first = trace.model.n_layers, []
    panel.reader.progressed.connect(lambda: first.append(time.perf_counter()) if not first else None)
    start = time.perf_counter()
    timer.start()
    panel.session.set_trace(trace)
    shown = time.perf_counter()
    while panel.described is None or panel.described.layers_done < layers:
        app.processEvents()
        time.sleep(0.001)
    end = time.perf_counter()
    timer.stop()
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    worst = max(range(len(gaps)), key=gaps.__getitem__) if gaps else None
    return {"set_trace_ms": round((shown - start) * 1000.0), "first_layer_s": round(first[0] - start, 2) if first
            else None, "total_s": round(end - start, 1), "gui_gap_ms": round(max(gaps) * 1000.0) if gaps else None,
            "gui_gap_p99_ms": round(sorted(gaps)[int(0.99 * (len(gaps) - 1))] * 1000.0) if gaps else None,
            "gui_gap_at_s": round(ticks[worst] - start, 2) if gaps else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--tokens", type=int, default=8000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from PySide6.QtWidgets import QApplication

    import explorer
    from explorer.app.panels.atlas import AtlasPanel
    from explorer.app.state.session import Session

    app = QApplication.instance() or QApplication([])
    model = explorer.load(args.model)
    start = time.perf_counter()
    trace = model.run(long_ids(model, args.tokens)).trace
    prefill_s = time.perf_counter() - start

    session = Session()
    session.set_model(trace.model)
    panel = AtlasPanel(session)
    panel.metric_box.setCurrentText("entropy")
    panel.resize(1366, 768)
    panel.show()
    app.processEvents()
    result = {"model": args.model, "tokens": args.tokens, "layers": trace.model.n_layers,
              "heads": trace.model.n_heads, "prefill_s": round(prefill_s, 1), **read_atlas(app, panel, trace)}
    computed = panel.reader.sums.computed
    t0 = time.perf_counter()
    panel.refresh()
    result["again_ms"] = round((time.perf_counter() - t0) * 1000.0, 1)
    assert panel.reader.sums.computed == computed
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    result["load_average"] = os.getloadavg()
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
