"""Run the whole boundary corpus outside pytest and print, for each case, whether it was handled cleanly and
what it said; then the count. `python -m tests.boundary.report [NAME-PIECE ...]`"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from tests.boundary import model_files, permissions, values, writers
from tests.boundary.harness import CONTRACT_S, ForkServer, judged
from tests.boundary.model_files import trace
from tests.core.tiny_checkpoints import write_hf_folder
from tests.malformed_gguf import llama_gguf


def main(*wanted: str) -> int:
    cases = [case for case in model_files.CASES + values.CASES + permissions.CASES + writers.CASES
             if not wanted or any(piece in case.name for piece in wanted)]
    server = ForkServer()
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        write_hf_folder(root / "good" / "model")
        llama_gguf(root / "good" / "model", root / "good", "model.gguf")
        shutil.copytree(root / "good" / "model", root / "normal" / "model")
        normal = server.execute(trace(root / "normal" / "model"), root / "normal")
        clean, slow = 0, []
        for number, case in enumerate(cases):
            folder = root / f"case{number}"
            shutil.copytree(root / "good" / "model", folder / "model")
            shutil.copy(root / "good" / "model.gguf", folder / "model.gguf")
            outcome = server.execute(case.build(folder), folder)
            faults = judged(case, outcome, folder, normal.peak_mb)
            if outcome.seconds > CONTRACT_S:
                slow.append(f"{case.name} ({outcome.seconds:.1f} s)")
            clean += not faults
            said = (outcome.stderr.strip().splitlines() or ["(nothing)"])[-1][:150]
            print(f"{'ok  ' if not faults else 'FAIL'} [{case.kind}] {case.name} -> exit {outcome.returncode}, "
                  f"{outcome.seconds:.1f} s, {outcome.peak_mb:.0f} MB: {'; '.join(faults) or said}", flush=True)
    server.close()
    print(f"{clean} of {len(cases)} handled cleanly (normal run: {normal.peak_mb:.0f} MB, {normal.seconds:.1f} s)")
    print(f"over {CONTRACT_S:.0f} s of their own time (load {os.getloadavg()[0]:.1f}): {', '.join(slow) or 'none'}")
    return 0 if clean == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
