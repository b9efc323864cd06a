"""docs/notebooks/tour.ipynb runs headless (nbclient + ipykernel) and its checks hold; no Qt in the kernel."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

TOUR = Path(__file__).resolve().parents[2] / "docs" / "notebooks" / "tour.ipynb"
NO_QT = "import sys\nprint(sorted(m for m in ('PySide6', 'pyqtgraph', 'matplotlib.pyplot') if m in sys.modules))"


def execute(monkeypatch, model: str) -> nbformat.NotebookNode:
    monkeypatch.setenv("TOUR_MODEL", model)
    notebook = nbformat.read(TOUR, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(NO_QT))
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(TOUR.parent)}}).execute()   # raises on a failing cell
    return notebook


def outputs(notebook) -> tuple[list[str], set[str]]:
    texts, kinds = [], set()
    for cell in notebook.cells:
        for output in cell.get("outputs", ()):
            if output.output_type == "stream":
                texts.append(output.text)
            kinds.update(output.get("data", {}))
    return texts, kinds


def test_the_tour_runs_on_a_bundled_model(monkeypatch):
    notebook = execute(monkeypatch, "shakespeare-gqa")
    texts, kinds = outputs(notebook)
    assert {"image/png", "image/svg+xml"} <= kinds                 # run.show draws inline
    assert texts[-1].strip() == "[]"                               # the kernel imported no Qt, no pyplot


@pytest.mark.realmodel
def test_the_tour_runs_on_smollm2(monkeypatch):
    from explorer.core.store import pulled_path

    if pulled_path("smollm2-135m") is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    texts, _ = outputs(execute(monkeypatch, "smollm2-135m"))
    assert "␣Paris" in texts[0] and "N_Q = 9, N_KV = 3" in "".join(texts)
