"""Every script run by path has its work under ``if __name__ == "__main__":``. On Python 3.14,
``multiprocessing`` starts processes with forkserver by default, and importing ``openvino`` starts a telemetry
process: both import the main module again, so a script whose work sits at module level runs twice
(docs/field-notes.md, "The study's own stack"). A module may define, import, assign and make its import path
(``sys.path.insert``, ``matplotlib.use``) at the top; anything else runs again in every such child."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

# what may run at module level: it has no effect beyond the module's own definitions
SAFE_CALLS = {
    "sys.path.insert",
    "sys.path.append",
    "matplotlib.use",
    "os.environ.setdefault",
    "os.environ.pop",
}


DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def unguarded(source: str) -> list[str]:
    """``line: statement`` for each module-level statement that would run again in a child process."""
    out: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, DEFINITIONS):
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign) and not _calls_work(node):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            if ast.unparse(node.value.func) in SAFE_CALLS:
                continue
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if test in ("__name__ == '__main__'", "TYPE_CHECKING"):
                continue
            if all(isinstance(n, ast.Raise) for n in node.body) and not node.orelse:
                continue  # a consistency check that can only stop the import
        out.append(f"{node.lineno}: {ast.unparse(node).splitlines()[0]}")
    return out


def _calls_work(node: ast.AST) -> bool:
    """Whether an assignment's value calls a ``main`` or ``run`` (work, not a definition)."""
    return any(
        isinstance(sub, ast.Call) and ast.unparse(sub.func).split(".")[-1] in ("main", "run")
        for sub in ast.walk(node)
    )


def scripts(repo: Path) -> list[Path]:
    """The Python files run by path: benchmarks/, references/, docker/, and any file with a shebang."""
    files = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    out = []
    for name in files:
        path = repo / name
        if name.startswith(("benchmarks/", "references/", "docker/")) or path.read_text(
            encoding="utf-8"
        ).startswith("#!"):
            out.append(path)
    return out


def test_every_script_guards_its_main(repo_root: Path) -> None:
    found = scripts(repo_root)
    assert any(p.name == "run.py" and p.parent.name == "references" for p in found)
    assert len([p for p in found if p.parent.name == "benchmarks"]) >= 5
    problems = {
        str(p.relative_to(repo_root)): bad for p in found if (bad := unguarded(p.read_text(encoding="utf-8")))
    }
    assert problems == {}


def test_the_rule_finds_unguarded_work() -> None:
    bad = (
        '"""doc"""\nimport sys\nsys.path.insert(0, ".")\nX = 1\nmain()\nfor i in range(2):\n    pass\n'
        "result = run()\nif TYPE_CHECKING:\n    import os\nif __name__ == '__main__':\n    main()\n"
    )
    assert unguarded(bad) == ["5: main()", "6: for i in range(2):", "8: result = run()"]
