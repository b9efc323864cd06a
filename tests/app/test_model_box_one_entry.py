"""The model box lists a model once (drive 20, m6): "smollm2-135m (recent)" stood beside "smollm2-135m · Instruct,
Q4_1 (pulled)". The recent list held the pulled model's store folder, and the catalog's entry opens from the .gguf
file inside it: two paths, one model, so both were listed.

Expectation, independent of the picker: the file each entry of the box opens (loaders.open_model, the app's one
door) is the pulled .gguf for exactly one entry.
"""
from __future__ import annotations

from pathlib import Path

from explorer import cli
from explorer.app.window.model_picker import ModelToolbar
from explorer.app.window.model_refs import catalog_choices
from explorer.core import store
from explorer.core.loaders.model_file import open_model


def opened_file(reference: str) -> Path | None:
    """What the app opens for an entry's reference: a catalog name through the store, a path as it is."""
    try:
        return open_model(store.resolve(reference)).path.resolve()
    except Exception:
        return None


def entries_opening(bar: ModelToolbar, target: Path) -> list[str]:
    box = bar.models
    return [box.itemText(i) for i in range(box.count())
            if isinstance(box.itemData(i), str) and opened_file(box.itemData(i)) == target]


def test_a_pulled_model_also_in_the_recent_list_is_listed_once(qtbot, catalog):
    links, _ = catalog
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    gguf = store.pulled_path("tiny").resolve()
    store.remember_recent(gguf.parent)                 # the store's folder of the pulled model, opened by hand
    bar = ModelToolbar()
    qtbot.addWidget(bar)
    bar.set_models(catalog_choices(), [str(gguf.parent)], str(gguf.parent))
    assert len(entries_opening(bar, gguf)) == 1, entries_opening(bar, gguf)
    assert bar.models.currentIndex() >= 0 and opened_file(bar.models.currentData()) == gguf


def test_explorer_models_lists_a_pulled_model_opened_by_its_folder_once(catalog, capsys):
    """The command line's list is the same catalog (store.catalog): the folder in recent.json is no second row."""
    links, _ = catalog
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    gguf = store.pulled_path("tiny").resolve()
    store.remember_recent(gguf.parent)
    capsys.readouterr()
    assert cli.main(["models"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["tiny"]
            or str(gguf.parent) in line]
    assert len(rows) == 1 and rows[0].split()[1] == "pulled", rows
