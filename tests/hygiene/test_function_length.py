"""No function in bench/ or analysis/ over 70 lines: a long function mixes concerns.

Length is what ``ast`` says: ``end_lineno - lineno + 1`` of every ``def`` and ``async def``, methods and
nested functions too (from the ``def`` line to the last line of the body: a docstring counts, decorators do
not). A nested function counts in its own length and in the one around it. No exceptions list: split it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import sources

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench", "analysis")
LIMIT = 70
# Over the limit for now, each with its reason; an entry that is no longer over the limit fails the test, so
# the list only shrinks. Empty now.
PENDING: dict[str, str] = {}


def long_functions(root: Path, packages: tuple[str, ...] = PACKAGES, limit: int = LIMIT) -> list[str]:
    """``path:line name() is N lines`` for every function over ``limit`` lines, in file and line order."""
    return [text for _, _, text in _long(root, packages, limit)]


def _long(root: Path, packages: tuple[str, ...], limit: int) -> list[tuple[str, int, str]]:
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = sources.tree(path)
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    if length > limit:
                        rel = path.relative_to(root).as_posix()
                        text = f"{rel}:{node.lineno} {node.name}() is {length} lines"
                        found.append((rel, node.lineno, text))
    return sorted(found)


def pending_key(text: str) -> str:
    """``bench/x.py:12 f() is 80 lines`` -> ``bench/x.py f`` (the PENDING key: no line number to go stale)."""
    where, name = text.split(" ", 2)[:2]
    return f"{where.rsplit(':', 1)[0]} {name.removesuffix('()')}"


def test_no_function_in_bench_or_analysis_is_over_70_lines() -> None:
    assert (
        len(list((ROOT / "bench").rglob("*.py"))) > 100
        and (ROOT / "analysis" / "reporting" / "report.py").is_file()
    )
    found = long_functions(ROOT)
    over = [text for text in found if pending_key(text) not in PENDING]
    assert over == [], (
        f"{len(over)} function(s) over {LIMIT} lines; split each into functions with one concern:\n"
        + "\n".join(over)
    )
    stale = sorted(set(PENDING) - {pending_key(text) for text in found})
    assert stale == [], f"no longer over {LIMIT} lines: remove {stale} from PENDING in {Path(__file__).name}"


def body(lines: int, indent: str = "    ") -> str:
    return "".join(f"{indent}x{i} = {i}\n" for i in range(lines))


def test_the_count_sees_methods_nested_and_async_functions(tmp_path: Path) -> None:
    source = (
        "def fits():\n"
        + body(69)  # lines 1-70: 70 lines, allowed
        + "\n@decorated\ndef over():\n"
        + body(70)  # def at 73: 71 lines, the decorator not counted
        + "\nclass C:\n    async def method(self):\n"
        + body(70, " " * 8)  # def at 146: 71 lines
        + "\ndef outer():\n    def inner():\n"
        + body(70, " " * 8)
        + "    return inner\n"  # 218: 73; 219: 71
    )
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "m.py").write_text("\ufeff" + source, encoding="utf-8")  # a BOM is read
    (tmp_path / "pkg" / "ok.py").write_text("def short():\n    return 1\n", encoding="utf-8")
    found = long_functions(tmp_path, ("pkg",))
    assert found == [
        "pkg/sub/m.py:73 over() is 71 lines",
        "pkg/sub/m.py:146 method() is 71 lines",
        "pkg/sub/m.py:218 outer() is 73 lines",
        "pkg/sub/m.py:219 inner() is 71 lines",
    ]
    assert long_functions(tmp_path, ("pkg",), limit=73) == []
    assert long_functions(tmp_path, ("pkg",), limit=69) == ["pkg/sub/m.py:1 fits() is 70 lines", *found]
    keys = [pending_key(t) for t in found]
    assert keys == ["pkg/sub/m.py over", "pkg/sub/m.py method", "pkg/sub/m.py outer", "pkg/sub/m.py inner"]
