"""Read-only git queries used by the integrity checks and the manifests (``git`` on PATH)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.errors import BenchError


def run_git(root: Path, *args: str, check: bool = True) -> bytes:
    """``git -C root args...`` and its stdout; BenchError (naming the command) when it fails."""
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise BenchError("`git` is not installed or not on PATH; it is needed to read the history.") from exc
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        raise BenchError(f"`git {' '.join(args)}` failed in {root}: {err}")
    return proc.stdout


def is_repo(root: Path) -> bool:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True, check=False
        )
    except FileNotFoundError:
        return False
    return proc.returncode == 0 and proc.stdout.strip() == b"true"


def head_commit(root: Path) -> str | None:
    if not is_repo(root):
        return None
    out = run_git(root, "rev-parse", "--verify", "-q", "HEAD", check=False).strip()
    return out.decode() or None


def dirty_paths(root: Path) -> list[str]:
    """Tracked files changed against HEAD plus untracked, non-ignored files (``git status --porcelain``)."""
    out = run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
    entries = [e for e in out.decode(errors="replace").split("\0") if e]
    return [e[3:] for e in entries if len(e) > 3]


@dataclass(frozen=True)
class FileVersion:
    """One committed version of a file: the commit that wrote it, its date and its bytes."""

    commit: str
    date: str  # committer date, ISO 8601
    path: str  # path in that commit (renames followed)
    data: bytes


def file_versions(root: Path, path: str) -> list[FileVersion]:
    """Every committed version of ``path`` (oldest first), following renames; deletions are skipped."""
    out = run_git(root, "log", "--follow", "--format=%x00%H %cI", "--name-status", "-M", "--", path)
    text = out.decode(errors="replace")
    versions: list[FileVersion] = []
    for block in text.split("\0"):
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if not lines:
            continue
        commit, date = lines[0].split(" ", 1)
        status = lines[1].split("\t") if len(lines) > 1 else ["M", path]
        if status[0].startswith("D"):
            continue
        name = status[-1]
        data = run_git(root, "show", f"{commit}:{name}")
        versions.append(FileVersion(commit, date, name, data))
    versions.reverse()
    return versions


def first_commit(root: Path) -> str:
    out = run_git(root, "rev-list", "--max-parents=0", "HEAD").decode().split()
    if len(out) != 1:
        raise BenchError(f"expected exactly one root commit in {root}, found {len(out)}: {out}")
    return out[0]


def commit_files(root: Path, commit: str) -> list[str]:
    return run_git(root, "ls-tree", "-r", "--name-only", "-z", commit).decode().split("\0")[:-1]


def show_file(root: Path, commit: str, path: str) -> bytes:
    return run_git(root, "show", f"{commit}:{path}")
