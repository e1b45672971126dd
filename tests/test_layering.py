"""Source rules that keep the code extendable, checked on the syntax tree so they stay true.

- Layering is one-way: the broker, the workloads, the analysis, the shared core and the feature
  packages never import the orchestrator, but for a feature's run (a command's work, beside it).
- Routing algorithm names are string literals in the registry module only.
- No module reaches into another's private members (``_name``): it imports none, and calls or reads
  one only on ``self``/``cls`` or on its own classes' objects.
- No function over 100 lines, no hand-written module over 600 lines.
- The code says what and why, not when: no "stop N", no "X s against Y s" (figures live in
  ``benchmarks/README.md``); the code, the docs and the README name no file outside the repository.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from scotbed import routing

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "scotbed"
REGISTRY = SRC / "routing" / "__init__.py"


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "_pb2" not in p.name)


def _rel(p: Path) -> str:
    return p.relative_to(SRC).as_posix()


def _imports(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            ids.add(id(first.value))
    return ids


#: a feature package's run: ``scotbed run`` of its specs, an orchestrator part kept beside its feature
FEATURE_RUNS = {"vinifera/run.py"}


@pytest.mark.parametrize(
    "path",
    [p for p in _modules() if not _rel(p).startswith("orchestrator/") and _rel(p) not in FEATURE_RUNS],
    ids=_rel,
)
def test_only_the_orchestrator_imports_the_orchestrator(path: Path) -> None:
    bad = sorted(m for m in _imports(ast.parse(path.read_text())) if m.startswith("scotbed.orchestrator"))
    assert bad == [], f"{_rel(path)} imports {bad}"


def test_routing_names_are_literals_in_the_registry_only() -> None:
    names = set(routing.ALGORITHMS) | set(routing.PEER_ALGORITHMS)
    found = []
    for path in _modules():
        if path == REGISTRY:
            continue
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in docs:
                found.append(f"{_rel(path)}:{node.lineno}: {node.value!r}")
    assert found == []
    registry = {n.value for n in ast.walk(ast.parse(REGISTRY.read_text())) if isinstance(n, ast.Constant)}
    assert names <= registry


def test_functions_and_modules_stay_small() -> None:
    long = []
    for path in _modules():
        text = path.read_text()
        if text.count("\n") > 600:
            long.append(f"{_rel(path)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > 100:
                    long.append(f"{_rel(path)}:{node.name}: {size} lines")
    assert long == []


#: ``module: expression`` of the private members still reached from outside their class, and why
PRIVATE_READS = {
    # objects of a class defined in the same module
    "broker/client.py: stream._start",
    "experiment/spec.py: spec._base_dir",
    # PySpark's JVM gateway, which has no public accessor
    "analysis/jvm_archive_build.py: spark.sparkContext._gateway",
    "analysis/pipeline.py: spark.sparkContext._jvm",
    "analysis/session.py: SparkContext._gateway",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scotbed"):
            found += [
                f"{_rel(path)}: from {node.module} import {a.name}" for a in node.names if _private(a.name)
            ]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            found.append(f"{_rel(path)}: {ast.unparse(node)}")
    return found


def test_no_module_reaches_into_another_s_private_members() -> None:
    found = {line for path in _modules() for line in _private_reads(path)}
    assert sorted(found - PRIVATE_READS) == []
    assert sorted(PRIVATE_READS - found) == [], "a listed exception is gone: drop it from PRIVATE_READS"


#: history in the code: a work session's number, a timing against another, a dropped attempt
HISTORY = re.compile(r"\bstop \d+|\d(?: ?(?:ms|µs|s))?\)? against \d|[Tt]ried and dropped")
#: a file outside the repository: the notes and papers beside it, the design contract's old home, /tmp
OUTSIDE = re.compile(r"\.\./(?:shared|notes|papers)/|(?<!docs/)\bDESIGN(?:\.md| ?§)|/tmp/(?!scotbed-)")
#: generated from the reproduction rows, which quote the papers' own references
GENERATED = {"docs/reproduction.md", "src/scotbed/orchestrator/reproduce/rows.yaml"}


def _lines(paths: list[Path], pattern: re.Pattern[str]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in paths
        if path.relative_to(ROOT).as_posix() not in GENERATED
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]


def test_the_code_carries_no_history() -> None:
    assert _lines(_modules(), HISTORY) == []


def test_code_docs_and_readme_name_no_file_outside_the_repository() -> None:
    texts = [*_modules(), *sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    assert _lines(texts, OUTSIDE) == []
