"""benchmarks/import_cycles.py: no import cycle across bench/ and analysis/, counting imports inside functions
and under TYPE_CHECKING; and the counter itself finds the cycles that lint-imports cannot see."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.support.scripts import load_file

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "import_cycles.py"


@pytest.fixture(scope="module")
def counter() -> ModuleType:
    return load_file(SCRIPT)


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_bench_and_analysis_have_no_import_cycle(
    counter: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    modules = counter.module_files()
    assert "bench.cli" in modules and "analysis.reporting.report" in modules and len(modules) > 150
    found = counter.cycles(counter.edges(modules))
    assert found == [], f"import cycles: {found} (run `uv run python benchmarks/import_cycles.py`)"
    assert counter.main() == 0
    assert capsys.readouterr().out.endswith("0 import cycle(s)\n")


def test_cycles_inside_functions_and_type_checking_count(
    counter: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import x\n",
            "pkg/b.py": "x = 1\n\n\ndef f():\n    from pkg import a\n    return a\n",  # a -> b -> a (in f)
            "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import Y\n",
            "pkg/d.py": "from . import c\nY = c\n",  # relative import, closing c -> d -> c
            "pkg/e.py": "import pkg.a\n",  # no cycle through e
            "pkg/sub/__init__.py": "from .. import e\n",
        },
    )
    modules = counter.module_files(root, ("pkg",))
    assert sorted(modules) == ["pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.sub"]
    graph = counter.edges(modules)
    assert graph["pkg.b"] == {"pkg.a": [5]} and graph["pkg.sub"] == {"pkg.e": [1]}
    assert counter.cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]
    assert counter.one_path(graph, ["pkg.a", "pkg.b"]) == ["pkg.a", "pkg.b", "pkg.a"]
    # the packages' own modules only: an external or stdlib import is no edge
    write(root, {"pkg/f.py": "import os\nimport numpy\nfrom typing import Any\n"})
    assert counter.edges(counter.module_files(root, ("pkg",)))["pkg.f"] == {}
