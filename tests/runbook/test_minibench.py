"""The miniature's sizes reach every module that holds one (tests/support/minibench.py).

Found by tests/runbook (a refactor moved MIRACL's test-B count from bench.data.miracl into the leaf
bench.data.layout; the miniature still set only bench.data.miracl's copy, so `bench data lock` checked the
miniature's 12 test-B topics against 712 and refused). A count the plan fixes may live in bench.core.plan (set
there before any other module is imported) or in a module named in ``OTHER_SIZES``; a module that copies
one of those with ``from X import NAME`` is named in ``COPIES``. Anything else would keep the study's number
in the miniature.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.support import minibench

NAMES = set(minibench.SIZES) | {n for sizes in minibench.OTHER_SIZES.values() for n in sizes}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)


def holders() -> tuple[set[tuple[str, str]], set[tuple[str, str, str]]]:
    """({(module, name)} bound to an int literal at module level, {(module, name, from)} imported by name)."""
    defined, copied = set(), set()
    for path in sorted((REPO_ROOT / "bench").rglob("*.py")):
        mod = module_name(path)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            value = getattr(node, "value", None)
            for t in targets:
                if isinstance(t, ast.Name) and t.id in NAMES and isinstance(value, ast.Constant):
                    defined.add((mod, t.id))
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    if alias.name in NAMES:
                        copied.add((mod, alias.name, node.module))
    return defined, copied


def test_every_count_is_where_the_miniature_sets_it() -> None:
    defined, copied = holders()
    allowed = {("bench.core.plan", n) for n in minibench.SIZES} | {
        (m, n) for m, sizes in minibench.OTHER_SIZES.items() for n in sizes
    }
    assert defined - allowed == set(), "a count the miniature does not set: add it to OTHER_SIZES"
    assert ("bench.data.layout", "TEST_B_QUERIES") in defined  # the check sees the module that moved
    unlisted = {
        (m, n) for m, n, src in copied if src != "bench.core.plan" and n not in minibench.COPIES.get(m, ())
    }
    assert unlisted == set(), "a copy of a count outside bench.core.plan: add it to COPIES"


def test_miniaturise_sets_every_holder() -> None:
    """In a fresh process (as a command of the chain): after ``miniaturise`` every holder reads the
    miniature's value, the copies included."""
    code = (
        "import importlib, json\n"
        "from tests.support import minibench\n"
        "minibench.miniaturise()\n"
        "from bench.data import hub, miracl\n"
        "from bench.data import layout\n"
        "from bench.core import plan\n"
        "print(json.dumps([layout.TEST_B_QUERIES, miracl.TEST_B_QUERIES, plan.DEV_QUERIES]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=600
    )
    assert out.stdout.strip() == (
        f"[{minibench.TEST_B_QUERIES}, {minibench.TEST_B_QUERIES}, {minibench.SIZES['DEV_QUERIES']}]"
    )
