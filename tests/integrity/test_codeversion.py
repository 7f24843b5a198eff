"""The code rule: the code digest is what a reviewer recomputes with git and sha256sum,
outputs never change it or block, and a code change is named."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.records.codeversion import (
    CODE_PATHS,
    code_digest,
    code_dirty_paths,
    different_code,
    require_clean_code,
)
from tests.conftest import git

CODE = {
    "PLAN.md": "# plan\n",
    "bench/a.py": "a = 1\n",
    "analysis/b.py": "b = 1\n",
    "uv.lock": "lock\n",
    "pyproject.toml": "[project]\n",
    "README.md": "readme\n",
}


def _sha256sum(root: Path, commit: str) -> str:
    """The reviewer's recomputation, independent of bench: git ls-tree piped into sha256sum."""
    cmd = f"git ls-tree -r -z --full-tree {commit} -- {' '.join(CODE_PATHS)} | sha256sum"
    out = subprocess.run(cmd, shell=True, cwd=root, capture_output=True, text=True, check=True).stdout
    return out.split()[0]


def test_digest_is_the_reviewers_recomputation_and_ignores_outputs(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo(
        [
            CODE,
            {
                "runs/s/m@100.trec": "q Q0 d 1 1.0 t\n",
                "results/x.json": "{}\n",
                "DEVIATIONS.md": "# d\n",
                "timestamps/a.ots": "x",
                "README.md": "new\n",
            },
            {"bench/a.py": "a = 2\n"},
        ]
    )
    first, outputs, code = (git(root, "rev-parse", f"HEAD~{n}").strip() for n in (2, 1, 0))
    assert code_digest(root, first) == _sha256sum(root, first)
    assert code_digest(root, first) == code_digest(root, outputs)  # only outputs and docs changed
    assert code_digest(root, code) != code_digest(root, outputs)
    assert code_digest(root, code) == _sha256sum(root, "HEAD") == code_digest(root)
    assert code_digest(root, "0" * 40) is None
    # the listing itself holds the paths: an empty listing (no code at all) is not what we hash here
    listing = git(root, "ls-tree", "-r", "--full-tree", "HEAD", "--", *CODE_PATHS)
    assert "bench/a.py" in listing and "README.md" not in listing and "runs/" not in listing
    assert hashlib.sha256(b"").hexdigest() != code_digest(root)


def test_dirty_code_paths_and_renames(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([CODE])
    assert code_dirty_paths(root) == []
    (root / "results").mkdir()
    (root / "results" / "new.json").write_text("{}")
    (root / "README.md").write_text("changed\n")
    assert code_dirty_paths(root) == []
    git(root, "mv", "bench/a.py", "bench/c.py")
    (root / "docker").mkdir()
    (root / "docker" / "x.Dockerfile").write_text("FROM x\n")
    assert code_dirty_paths(root) == ["bench/a.py", "bench/c.py", "docker/x.Dockerfile"]
    with pytest.raises(BenchError, match=r"\(bench/a\.py, bench/c\.py, docker/x\.Dockerfile\)"):
        require_clean_code(root)


def test_different_code_names_the_paths(tmp_git_repo: Callable[..., Path]) -> None:
    root = tmp_git_repo([CODE, {"runs/x.trec": "", "results/y.json": "{}"}, {"analysis/b.py": "b = 2\n"}])
    c0, c1, c2 = (git(root, "rev-parse", f"HEAD~{n}").strip() for n in (2, 1, 0))
    rec = {c: {"commit": c, "code_digest": code_digest(root, c)} for c in (c0, c1, c2)}
    assert different_code([rec[c0]], rec[c1], root) is None  # another commit, same code
    why = different_code([rec[c0], rec[c1]], rec[c2], root)
    assert why is not None and f"differ from commit {c0}: analysis/b.py" in why
    # a session recorded before digests existed is compared by its commit's digest
    assert different_code([{"commit": c0}], rec[c1], root) is None
    assert different_code([{"commit": c0}], rec[c2], root) is not None
    # a commit this history lacks: the digests are named
    why = different_code([{"commit": "f" * 40, "code_digest": "e" * 64}], rec[c2], root)
    assert why is not None and "e" * 64 in why and str(rec[c2]["code_digest"]) in why
