"""Model references as the app shows them: the catalog's entries, the default model, short names, licences.

A reference is what the person chose and what a session file stores: a catalog
name (e.g. "smollm2-135m") or a path to a folder or .gguf file. The worker
resolves it through `explorer.core.store` on its own thread.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PULLED = "smollm2-135m"
DEFAULT_BUNDLED = "shakespeare-gqa"


@dataclass(frozen=True)
class ModelChoice:
    label: str
    reference: str
    tip: str = ""
    license: str | None = None


def resources_dir() -> Path:
    """resources/ beside the package, or inside a PyInstaller bundle."""
    bundle = getattr(sys, "_MEIPASS", None)
    return Path(bundle) / "resources" if bundle else Path(__file__).resolve().parents[2] / "resources"


def bundled_model_path(name: str = DEFAULT_BUNDLED) -> Path | None:
    path = resources_dir() / "models" / name
    return path if path.exists() else None


def catalog_choices() -> list[ModelChoice]:
    """Every model that can be opened now: bundled, pulled and found in the Hugging Face cache."""
    from explorer.core import store

    choices = []
    for entry in store.catalog():
        if not getattr(entry, "available", True):
            continue
        where = getattr(entry, "source", "") or getattr(entry, "kind", "")
        label = f"{entry.name}  ({where})" if where else entry.name
        tip = getattr(entry, "description", "") or str(getattr(entry, "path", "") or "")
        choices.append(ModelChoice(label=label, reference=entry.name, tip=tip,
                                   license=getattr(entry, "license", None)))
    return choices


def default_model() -> str | None:
    """The pulled SmolLM2-135M if the store has it, else the bundled Shakespeare model, else None."""
    names = {choice.reference for choice in catalog_choices()}
    if DEFAULT_PULLED in names:
        return DEFAULT_PULLED
    if DEFAULT_BUNDLED in names:
        return DEFAULT_BUNDLED
    bundled = bundled_model_path()
    return str(bundled) if bundled is not None else None


HOW_TO_GET_A_MODEL = (
    "No model is available yet. Pull the default one with\n\n"
    "    python -m explorer pull smollm2-135m\n\n"
    "or open any Hugging Face model folder or .gguf file with File ▸ Open Model Folder… "
    "(or drop it on the window)."
)


def short_name(reference: str) -> str:
    """'smollm2-135m' stays; '/a/b/model.gguf' becomes 'model.gguf'; a folder its last part."""
    if "/" not in reference and "\\" not in reference:
        return reference
    return Path(reference).name or reference


def is_model_path(path: str) -> bool:
    """Whether a dropped path looks like something the loaders open: a folder, .gguf or .safetensors."""
    p = Path(path)
    return p.is_dir() or p.suffix.lower() in (".gguf", ".safetensors")
