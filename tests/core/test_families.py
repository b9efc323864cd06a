"""The family table (explorer/core/families.py): one row per model_type that every part reads, and no cycles."""
from __future__ import annotations

import sys
from types import SimpleNamespace

import grimp
import pytest

from explorer.core import drivers, families, weight_names
from explorer.core.config import ModelConfig
from explorer.core.runtime import from_tensors
from tests.core.conftest import FAMILIES as TINY
from tests.core.conftest import make_hf_model


def test_every_family_row_has_a_config_reader_and_every_reader_a_row():
    # gemma3: the multimodal wrapper, read as its gemma3_text text_config
    assert {name for name, row in families.FAMILIES.items() if row.reader is None} == {"gemma3"}
    assert all(callable(row.reader) for row in families.FAMILIES.values() if row.reader)


@pytest.mark.parametrize("family", sorted(TINY))
def test_a_decoder_rows_weight_table_is_what_the_engine_maps_with(family):
    hf = make_hf_model(family)
    row = families.family_of(hf.config.to_dict())
    assert row.decoder_only and row.cache == "kv"
    assert row.weights in (weight_names.DENSE, weight_names.GPT2, weight_names.GEMMA3, weight_names.DEEPSEEK)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name=family)
    assert loaded.config.family == ModelConfig.from_hf(hf.config.to_dict()).family
    assert families.FAMILIES[loaded.config.family].weights is row.weights
    assert type(drivers.make_decoder(loaded)) is drivers.driver_class(row)


def test_unknown_model_types_are_named_with_the_supported_ones():
    with pytest.raises(families.UnsupportedModelError, match="'mamba' is not supported .*llama"):
        families.family_of({"model_type": "mamba"}, "x")


def test_a_loaded_model_finds_its_row_by_the_family_it_reports():
    def model(family):
        return SimpleNamespace(info=SimpleNamespace(family=family, name="m"))
    assert families.family_of_model(model("encdec")) is families.FAMILIES["explorer-encdec"]
    assert families.family_of_model(model("bert")).cache == "none"
    assert drivers.driver_class(families.family_of_model(model("gemma3"))) is drivers.Decoder
    with pytest.raises(families.UnsupportedModelError, match="'mamba' has no row"):
        families.family_of_model(model("mamba"))


def strongly_connected(graph, modules) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module: the import cycles."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v) & modules:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


def test_the_package_has_no_import_cycle():
    """No module reaches itself through its imports (lazy ones count; `if TYPE_CHECKING:` ones do not)."""
    graph = grimp.build_graph("explorer", exclude_type_checking_imports=True)
    assert strongly_connected(graph, {m for m in graph.modules if m.startswith("explorer.")}) == []


def test_the_config_readers_are_plain_imports_the_import_tools_see():
    """Each row holds its config reader itself, from a module the family table imports (no "module:function"
    string resolved at first use, which hid the edge from the cycle test above)."""
    graph = grimp.build_graph("explorer", exclude_type_checking_imports=True)
    imported = graph.find_modules_directly_imported_by("explorer.core.families")
    readers = [row.reader for row in families.FAMILIES.values() if row.reader is not None]
    assert all(callable(reader) and reader.__module__ in imported for reader in readers)


def test_the_cycle_finder_finds_a_cycle():
    class Graph:
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, module):
            return self.edges[module]
    assert strongly_connected(Graph(), {"a", "b", "c", "d"}) == [["a", "b", "c"]]
