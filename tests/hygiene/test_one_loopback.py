"""One loopback HTTP server in the tests: ``tests/support/loopback.py`` is the only file
under tests/ or benchmarks/ that imports ``http.server`` or ``socketserver``; every fake API, stand-in server
and file server answers on its ``Loopback`` with a ``respond`` function. A file elsewhere that imports either
fails this test, named by file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.hygiene.test_function_imports import imported_names
from tests.support import sources

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = ROOT / "tests" / "support" / "loopback.py"
SERVER_MODULES = frozenset({"http.server", "socketserver"})
USE_LOOPBACK = "answer on tests.support.loopback.Loopback (a respond function returning Response)"


def offences(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line import`` for each import of a server module in ``path``."""
    rel = path.relative_to(root).as_posix()
    tree = sources.tree(path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        hit = sorted({n for n in imported_names(node) if n in SERVER_MODULES})
        if hit:
            found.append(f"{rel}:{node.lineno} imports {hit[0]}: {USE_LOOPBACK}")
    return found


def scanned(root: Path = ROOT) -> list[Path]:
    loopback = root / "tests" / "support" / "loopback.py"
    files = sorted((root / "tests").rglob("*.py")) + sorted((root / "benchmarks").rglob("*.py"))
    return [p for p in files if p != loopback]


def test_one_loopback_server() -> None:
    files = scanned()
    assert len(files) > 100
    found = [o for p in files for o in offences(p)]
    assert found == [], f"{len(found)} HTTP server(s) outside tests/support/loopback.py:\n" + "\n".join(found)


def test_the_loopback_module_is_what_the_rule_points_to() -> None:
    assert offences(LOOPBACK) == [
        f"tests/support/loopback.py:{_line_of(LOOPBACK, 'from http.server import')} imports http.server: "
        + USE_LOOPBACK
    ]


def _line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in ln)


def test_the_rule_catches_each_spelling(tmp_path: Path) -> None:
    bad = tmp_path / "tests" / "x" / "test_bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "import http.server\n"
        "from http.server import ThreadingHTTPServer\n"
        "from http import server\n"
        "import socketserver\n"
        "from http import client\n"  # a client is not a server
        "import http\n",
        encoding="utf-8",
    )
    assert [o.split(" ", 1)[0] for o in offences(bad, tmp_path)] == [
        "tests/x/test_bad.py:1",
        "tests/x/test_bad.py:2",
        "tests/x/test_bad.py:3",
        "tests/x/test_bad.py:4",
    ]
