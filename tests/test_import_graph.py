"""The dvfslab package's modules import one another without a cycle.

The graph is read from the package's own source files with `ast`: every import counts, those
inside functions and under `if TYPE_CHECKING:` too, since each is a dependency a reader must
follow. Importing `dvfslab.a.b` also runs the package `dvfslab.a` (its __init__), so that is an
edge as well, except towards the importing module's own packages, which Python has already
started when the module runs; a name taken from one's own package's __init__ (`from dvfslab.a
import Name` inside dvfslab.a) is an edge to it, since that __init__ may not have defined it yet.

    python tests/test_import_graph.py    prints the cycles, if any
"""

from __future__ import annotations

import ast
import sys
from importlib import util
from pathlib import Path

PACKAGE = "dvfslab"


def package_dir() -> Path:
    """The directory of the dvfslab package that tests import (a worktree's under PYTHONPATH)."""
    spec = util.find_spec(PACKAGE)
    assert spec is not None, f"{PACKAGE} is not importable"
    assert spec.submodule_search_locations, f"{PACKAGE} is not a package"
    return Path(next(iter(spec.submodule_search_locations)))


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the package by dotted name; a package is named by its __init__.py, the
    compiled `_core` by its stub (_core.pyi)."""
    modules = {}
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.pyi")]):
        parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules.setdefault(".".join(parts), path)
    return modules


def imported_names(module: str, path: Path, is_package: bool) -> set[str]:
    """The dotted names `module` imports, relative imports resolved: `import X.y` gives X.y,
    `from X import y` gives X.y (y a module, or a name X defines)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module.split(".") if is_package else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join([*here[: len(here) - node.level + 1], node.module or ""])
                base = base.rstrip(".")
            else:
                base = node.module or ""
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the package's modules it depends on: the module an import names (for `from X
    import y` with y not a module, X), and the packages on the way to it, which Python runs
    first, unless the importing module is inside them (they are running already)."""
    files = module_files(root)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        if path.suffix == ".pyi":
            graph[module] = set()
            continue
        own_packages = {module.rsplit(".", k)[0] for k in range(1, module.count(".") + 1)}
        edges = set()
        for name in imported_names(module, path, path.name == "__init__.py"):
            parts = name.split(".")
            prefixes = [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
            known = [p for p in prefixes if p in files]
            if not known:
                continue
            named, on_the_way = known[-1], known[:-1]
            edges.add(named)
            edges.update(p for p in on_the_way if p not in own_packages)
        edges.discard(module)
        graph[module] = edges
    return graph


def tangles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan): the
    modules that reach one another through imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A path from the component's first module back to itself, within the component."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph[node] & component):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return sorted(component)


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(package_dir())
    found = tangles(graph)
    assert not found, "import cycles among dvfslab's modules:\n" + "\n".join(
        " -> ".join(cycle_in(graph, set(c))) for c in found
    )


def test_the_graph_sees_imports_of_every_kind(tmp_path: Path) -> None:
    """A cycle made only of a relative import, an import inside a function and one under
    TYPE_CHECKING is found; the real package's graph has the edges its files spell."""
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import f\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from dvfslab import b\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dvfslab.sub.a import f\n"
    )
    (pkg / "sub" / "c.py").write_text("from dvfslab.sub import f\nfrom dvfslab.sub import a\n")
    graph = import_graph(pkg)
    assert graph["dvfslab.sub"] == {"dvfslab.sub.a"}
    assert graph["dvfslab.sub.a"] == {"dvfslab.b"}
    assert graph["dvfslab.b"] == {"dvfslab.sub", "dvfslab.sub.a"}
    # A name its own package's __init__ defines is an edge to it; its sibling module is not.
    assert graph["dvfslab.sub.c"] == {"dvfslab.sub", "dvfslab.sub.a"}
    assert tangles(graph) == [["dvfslab.b", "dvfslab.sub", "dvfslab.sub.a"]]
    assert cycle_in(graph, {"dvfslab.b", "dvfslab.sub", "dvfslab.sub.a"}) == [
        "dvfslab.b",
        "dvfslab.sub.a",
        "dvfslab.b",
    ]
    assert tangles({**graph, "dvfslab.b": set()}) == []  # without b's imports, no cycle

    real = import_graph(package_dir())
    assert "dvfslab.api" in real["dvfslab"]  # __init__ re-exports simulate
    assert "dvfslab._core" in real["dvfslab.api"]
    assert "dvfslab.governors" in real["dvfslab.api"]
    assert "dvfslab.campaign.store" in real["dvfslab.campaign.runner"]


if __name__ == "__main__":
    package_graph = import_graph(package_dir())
    for component in tangles(package_graph):
        print(" -> ".join(cycle_in(package_graph, set(component))))
    sys.exit(1 if tangles(package_graph) else 0)
