"""The family table resolves no module by name, and no module is on an import cycle, counting the imports that
static tools miss: a "module:attribute" string resolved by import_module at first use."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import grimp
import pytest

import explorer.core.families
from explorer.core import drivers, families, runtime
from tests.core.test_families import strongly_connected

FAMILIES_SOURCE = Path(explorer.core.families.__file__)
# "explorer.x.y" or "explorer.x.y:attr": a module named in a string, which import_module would load
MODULE_STRING = re.compile(r"^(explorer(?:\.\w+)+)(?::[\w.]*)?$")


def named_modules(source: Path) -> set[str]:
    """The explorer modules a file names in its string constants (what import_module could turn into imports)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return {match[1] for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            for match in [MODULE_STRING.match(node.value)] if match}


def test_the_family_table_resolves_no_module_by_name():
    tree = ast.parse(FAMILIES_SOURCE.read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    called = {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
              for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert not {"importlib", "import_module", "__import__"} & (imported | called)
    assert named_modules(FAMILIES_SOURCE) == set()


def test_the_string_finder_finds_a_module_string(tmp_path):
    source = tmp_path / "rows.py"
    source.write_text('ROW = ("explorer.core.weights:DENSE", "explorer.core.runtime", "DENSE", "a:b")\n'
                      'TABLE = f"explorer.core.loaders.gguf:{ROW}"\n')
    assert named_modules(source) == {"explorer.core.weights", "explorer.core.runtime", "explorer.core.loaders.gguf"}


def test_no_module_is_on_an_import_cycle_string_and_function_local_imports_counted():
    """grimp's graph holds the function-local imports; the modules the family table names in strings are
    added as its imports, so a name resolved at first use would close the cycle it hides."""
    graph = grimp.build_graph("explorer", cache_dir=None, exclude_type_checking_imports=True)
    for module in named_modules(FAMILIES_SOURCE):
        graph.add_import(importer="explorer.core.families", imported=module)
    assert strongly_connected(graph, {m for m in graph.modules if m.startswith("explorer.")}) == []


@pytest.mark.parametrize("row", list(families.FAMILIES.values()), ids=list(families.FAMILIES))
def test_a_row_names_only_its_builder_and_driver_and_each_name_resolves(row):
    """The builders and drivers are torch code above the row: it names them, and runtime.BUILDERS and
    drivers.DRIVERS resolve the name. Every other column is the fact itself (test_family_row_holds_its_tables)."""
    assert row.driver in drivers.DRIVERS
    assert drivers.driver_class(row) is {"kv": drivers.Decoder, "none": drivers.EncoderRunner,
                                         "cross": drivers.EncDecDecoder}[row.cache]
    assert row.builder in runtime.BUILDERS or row.decoder_only
