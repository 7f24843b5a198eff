"""Collecting the suite loads no heavy library: every pytest-xdist worker imports every
test module, so a heavy import at the top of one test file is paid by each worker before any test runs (torch,
scipy.stats, statsmodels and matplotlib there cost 17 s of CPU per worker on the 2-core AMD EPYC, load 8,
2026-12-01). A test that needs such a library imports it inside the function, with a comment.

Modules of ours whose top imports a heavy library (``HEAVY_INTERNAL`` of test_function_imports) count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.hygiene.test_function_imports import HEAVY_INTERNAL, imported_names
from tests.support import sources

ROOT = Path(__file__).resolve().parents[2]
HEAVY_AT_COLLECTION = frozenset(
    {
        "torch",
        "transformers",
        "sentence_transformers",
        "optimum",
        "openvino",
        "nncf",
        "matplotlib",
        "scipy",
        "statsmodels",
        "pandas",
        "sklearn",
    }
)


def _top_level_imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in sources.tree(path).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            out += [(node.lineno, name) for name in imported_names(node)]
    return out


def test_no_heavy_import_at_the_top_of_a_test_module() -> None:
    # empty since every figure module imports matplotlib inside its drawing functions (analysis.figures;
    # tests/hygiene/test_function_imports.py checks that no module of ours pulls matplotlib at its top)
    internal = {m for m, lib in HEAVY_INTERNAL.items() if lib in HEAVY_AT_COLLECTION}
    found = {
        f"{path.relative_to(ROOT)}:{line}": module  # one entry per import statement
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line, module in reversed(_top_level_imports(path))
        if module.split(".")[0] in HEAVY_AT_COLLECTION or module in internal
    }
    assert not found, "import these inside the test functions that use them:\n" + "\n".join(
        f"{where}: {module}" for where, module in found.items()
    )
