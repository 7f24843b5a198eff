"""The reviewer's environment holds no torch, transformers, openvino or CUDA (uv.lock), and the reviewer's
commands import none of them (as tests/analysis/test_analysis_imports.py keeps analysis from importing
bench)."""

from __future__ import annotations

import subprocess
import tomllib
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

HEAVY = ("torch", "transformers", "openvino", "sentence_transformers", "optimum", "nncf", "triton")
HEAVY_PACKAGES = (
    "torch",
    "transformers",
    "openvino",
    "sentence-transformers",
    "optimum",
    "nncf",
    "triton",
    "nvidia-",
)


def review_closure() -> set[str]:
    """Every package ``uv sync --no-default-groups --group review`` installs, from uv.lock."""
    packages = tomllib.loads((REPO_ROOT / "uv.lock").read_text(encoding="utf-8"))["package"]
    lock = {p["name"]: p for p in packages}

    def edges(entries: list[dict[str, Any]]) -> set[str]:
        out = set()
        for d in entries:
            out.add(d["name"])
            for extra in d.get("extra", []):
                out |= {x["name"] for x in lock[d["name"]].get("optional-dependencies", {}).get(extra, [])}
        return out

    project = lock["miracl-de-rerankers"]
    todo = list(edges(project["dependencies"]) | edges(project["dev-dependencies"]["review"]))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += edges(lock[name].get("dependencies", []))
    return seen


def test_review_group_holds_no_measuring_stack() -> None:
    closure = review_closure()
    assert {"opentimestamps", "bm25s", "pystemmer", "numpy", "pyarrow"} <= closure
    assert not {p for p in closure if p.startswith(HEAVY_PACKAGES)}


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "audit", "--help"],
        ["bench", "reproduce", "--help"],
        ["bench", "timestamps", "verify", "--help"],
        ["bench", "data", "verify", "--help"],
        ["analysis", "report", "--help"],
        ["bench", "audit"],
        ["bench", "timestamps", "verify"],
    ],
)
def test_reviewer_commands_import_no_torch(args: list[str], review_python: str) -> None:
    code = (
        "import sys\n"
        f"from {'bench' if args[0] == 'bench' else 'analysis'}.cli import main\n"
        f"sys.argv = {args!r}\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        f"print('HEAVY', sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    # a process of this interpreter forked from tests/review/conftest.py's server (its preloads light)
    done = subprocess.run([review_python, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.stdout.strip().splitlines()[-1] == "HEAVY []", done.stdout[-2000:] + done.stderr[-2000:]
