"""docs/notebooks/ioi.ipynb, the indirect-object walkthrough, runs headless on SmolLM2 and its checks hold."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

IOI = Path(__file__).resolve().parents[2] / "docs" / "notebooks" / "ioi.ipynb"


@pytest.mark.realmodel
def test_the_ioi_walkthrough_runs_on_smollm2(monkeypatch):
    from explorer.core.store import pulled_path

    if pulled_path("smollm2-135m") is None:
        pytest.skip("smollm2-135m is not pulled (python -m explorer pull smollm2-135m)")
    monkeypatch.setenv("IOI_MODEL", "smollm2-135m")
    notebook = nbformat.read(IOI, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(IOI.parent)}}).execute()   # raises on a failing cell
    texts = [o.text for cell in notebook.cells for o in cell.get("outputs", ()) if o.output_type == "stream"]
    assert any("top heads" in text for text in texts) and any("induction head" in text for text in texts)
