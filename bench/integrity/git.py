"""Read-only git queries used by the integrity checks and the manifests (``git`` on PATH)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import BenchError


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
    path: str  # path in that commit
    data: bytes


SHALLOW = "shallow clone: the history is incomplete; run `git fetch --unshallow` and try again"


def require_full_history(root: Path) -> None:
    """BenchError (one line with the fix) in a shallow clone: what it lists of the history is not all."""
    if run_git(root, "rev-parse", "--is-shallow-repository", check=False).strip() == b"true":
        raise BenchError(f"{root}: {SHALLOW}")


def history(root: Path) -> list[tuple[str, str]]:
    """(commit, committer date ISO 8601) of every commit reachable from HEAD, merges and both sides of
    them included, parents before children (``git rev-list --topo-order --reverse``)."""
    require_full_history(root)
    out = run_git(root, "rev-list", "--topo-order", "--reverse", "--format=%H %cI", "HEAD").decode()
    rows = [line.split(" ", 1) for line in out.splitlines() if line and not line.startswith("commit ")]
    return [(c, d) for c, d in rows]


def blobs_at(root: Path, commits: list[str], path: str) -> list[str | None]:
    """The blob id of ``path`` in each commit (None where the commit does not hold it), in one git call."""
    if not commits:
        return []
    query = "".join(f"{c}:{path}\n" for c in commits).encode()
    proc = subprocess.run(
        ["git", "-C", str(root), "cat-file", "--batch-check=%(objectname) %(objecttype)"],
        input=query,
        capture_output=True,
        check=False,
    )
    lines = proc.stdout.decode(errors="replace").splitlines()
    if proc.returncode != 0 or len(lines) != len(commits):
        raise BenchError(f"`git cat-file --batch-check` failed in {root}: {proc.stderr.decode().strip()}")
    return [ln.split(" ")[0] if ln.endswith(" blob") else None for ln in lines]


def file_versions(root: Path, path: str) -> list[FileVersion]:
    """Every distinct version of ``path`` held by any commit of the history (merges and both of their sides
    included, so a version that only a merge wrote is listed), oldest first: each labelled with the first
    commit, in topological order, that holds it. Refuses a shallow clone (BenchError)."""
    commits = history(root)
    seen: dict[str, tuple[str, str]] = {}
    for (commit, date), blob in zip(commits, blobs_at(root, [c for c, _ in commits], path), strict=True):
        if blob is not None and blob not in seen:
            seen[blob] = (commit, date)
    data = _cat_batch(root, list(seen))  # every version's bytes in one git call, not one call each
    if any(kind != b"blob" for kind, _ in data.values()):
        raise BenchError(f"`git cat-file --batch` in {root}: a version of {path} is not readable")
    return [FileVersion(c, d, path, data[b][1]) for b, (c, d) in seen.items()]


def first_commit(root: Path) -> str:
    require_full_history(root)
    out = run_git(root, "rev-list", "--max-parents=0", "HEAD").decode().split()
    if len(out) != 1:
        raise BenchError(f"expected exactly one root commit in {root}, found {len(out)}: {out}")
    return out[0]


def commit_files(root: Path, commit: str) -> list[str]:
    return run_git(root, "ls-tree", "-r", "--name-only", "-z", commit).decode().split("\0")[:-1]


def show_file(root: Path, commit: str, path: str) -> bytes:
    return run_git(root, "show", f"{commit}:{path}")


def _cat_batch(root: Path, names: list[str]) -> dict[str, tuple[bytes, bytes]]:
    """(object type, bytes) of each of ``names`` (``COMMIT:PATH`` or an object id) in one ``git cat-file
    --batch`` call; a name git does not find has the type ``missing`` and no bytes."""
    query = "".join(f"{n}\n" for n in names).encode()
    proc = subprocess.run(
        ["git", "-C", str(root), "cat-file", "--batch"], input=query, capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise BenchError(f"`git cat-file --batch` failed in {root}: {proc.stderr.decode().strip()}")
    out, at = {}, 0
    for n in names:
        end = proc.stdout.index(b"\n", at)
        header = proc.stdout[at:end].split(b" ")
        if len(header) != 3:  # "<name> missing" (or ambiguous): no content follows
            out[n], at = (b"missing", b""), end + 1
            continue
        size = int(header[2])
        out[n] = (header[1], proc.stdout[end + 1 : end + 1 + size])
        at = end + 1 + size + 1  # the content, then a newline
    return out


def show_files(root: Path, commit: str, paths: list[str]) -> dict[str, bytes]:
    """The bytes of each of ``paths`` in ``commit`` (as ``show_file``), in one git call; BenchError naming
    the first path that is not a file there."""
    if not paths:
        return {}
    got = _cat_batch(root, [f"{commit}:{p}" for p in paths])
    out = {}
    for p in paths:
        kind, data = got[f"{commit}:{p}"]
        if kind != b"blob":
            raise BenchError(f"`git show {commit}:{p}` failed in {root}: not a file in that commit")
        out[p] = data
    return out
