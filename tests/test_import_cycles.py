"""No import cycle inside the package: a module never imports, directly or through others, a module
that imports it back.

The graph is grimp's (the one import-linter checks the layers on): imports inside functions count,
imports under ``if TYPE_CHECKING:`` do not (they name a type for the checker and run nothing, as
``[tool.importlinter]`` has it). A cycle is reported as the chain of modules that closes it.
"""

from __future__ import annotations

import grimp
import pytest


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("scotbed", exclude_type_checking_imports=True, cache_dir=None)


def cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One closing chain per set of modules caught in a cycle, shortest first."""
    found: dict[frozenset[str], tuple[str, ...]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                chain = (importer, *back)
                found.setdefault(frozenset(chain), chain)
    return sorted(found.values(), key=len)


def test_no_module_imports_itself_back(graph: grimp.ImportGraph) -> None:
    assert [" -> ".join(c) for c in cycles(graph)] == []


def test_a_cycle_is_found_and_named() -> None:
    g = grimp.ImportGraph()
    g.add_import(importer="p.a", imported="p.b", line_number=1, line_contents="from p import b")
    g.add_import(importer="p.b", imported="p.c", line_number=1, line_contents="from p import c")
    g.add_import(importer="p.c", imported="p.a", line_number=9, line_contents="from p import a")
    g.add_import(importer="p.c", imported="p.d", line_number=1, line_contents="from p import d")
    assert cycles(g) == [("p.a", "p.b", "p.c", "p.a")]
