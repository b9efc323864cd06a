"""Transformer Explorer: the exact algebra of a transformer, on your text, one token at a time.

The Python API (explorer/api.py), importable without torch or Qt until a model is loaded:

    import explorer
    model = explorer.load("smollm2-135m")
    run = model.run("The capital of France is", steps=3)
    run.attention(3, 2), run.logits, run.show(3, 2)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.core.errors import ContextOverflowError, ExplorerError, ModelLoadError, UnsupportedModelError

__version__ = "0.1.0"

if TYPE_CHECKING:
    from explorer.api import Model, Run, kv_table, load
    from explorer.core.intervention import Intervention
    from explorer.core.sampling_settings import Sampling
    from explorer.plots import AttentionFigure

# Looked up on first use, so that `import explorer` (and the app's start) stays light.
_LAZY = {"load": "explorer.api", "Model": "explorer.api", "Run": "explorer.api", "kv_table": "explorer.api",
         "Sampling": "explorer.core.sampling_settings", "AttentionFigure": "explorer.plots",
         "Intervention": "explorer.core.intervention"}

__all__ = ["AttentionFigure", "ContextOverflowError", "ExplorerError", "Intervention", "Model", "ModelLoadError", "Run",
           "Sampling", "UnsupportedModelError", "kv_table", "load", "__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module  # here, not at the top: `explorer.import_module` is no API

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")
