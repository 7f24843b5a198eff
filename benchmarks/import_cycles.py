"""Import cycles across ``bench/`` and ``analysis/``, counting imports inside functions too.

``lint-imports`` (import-linter, contracts in pyproject.toml) states the layers; this script states the
stronger rule the layers imply: no module reaches itself through imports, wherever in a file the import
statement stands (module level, inside a function or a method, inside ``try``). Imports under
``if TYPE_CHECKING:`` count too (as they do for import-linter): a type a module needs from a module that
imports it belongs in a lower module.

A cycle is a strongly connected component of the module graph with more than one module (Tarjan). An
import of a package counts as an import of its ``__init__``; ``from pkg import name`` counts as an import of
``pkg.name`` when that is a module, else of ``pkg``. Prints every cycle with one path through it and the
import statements (file:line) that close it; exits 1 when there is one, 0 when there is none.

    uv run python benchmarks/import_cycles.py
"""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("bench", "analysis")


def module_files(root: Path = REPO, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the packages under ``root``."""
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of the tree, at any depth (functions, methods, ``try``, ``if``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` is or lies in (``bench.core.paths.X`` ->
    ``bench.core.paths``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def edges(modules: dict[str, Path]) -> dict[str, dict[str, list[int]]]:
    """module -> imported internal module -> line numbers of the statements."""
    graph: dict[str, dict[str, list[int]]] = {m: {} for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = module.split(".") if is_package else module.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                found = _resolve(target, modules)
                if found is not None and found != module:
                    graph[module].setdefault(found, []).append(node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, list[int]]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def one_path(graph: dict[str, dict[str, list[int]]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first inside the component)."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node]):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return component  # unreachable for a strongly connected component


def main() -> int:
    modules = module_files()
    graph = edges(modules)
    found = cycles(graph)
    statements = sum(len(lines) for targets in graph.values() for lines in targets.values())
    print(
        f"{len(modules)} modules, {statements} internal import statements (function-level and "
        "TYPE_CHECKING ones included)"
    )
    for component in found:
        path = one_path(graph, component)
        print(f"cycle of {len(component)} modules: {', '.join(component)}")
        for a, b in itertools.pairwise(path):
            lines = ", ".join(str(n) for n in graph[a][b])
            print(f"  {modules[a].relative_to(REPO)}:{lines} imports {b}")
    print(f"{len(found)} import cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
