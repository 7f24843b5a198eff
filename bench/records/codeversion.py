"""Which code made a measurement: the one rule every measuring command and every resume follows.

Plan section "Reproducibility and licences" (results name the code that made them). A measurement names
its *code*, the files under ``CODE_PATHS``. Before measuring, those paths must have no uncommitted change
(``require_clean_code``), and every session of one study must run the same code (``different_code``).
Outputs are not code: files under ``runs/`` and ``results/`` (committed or not), ``DEVIATIONS.md``,
``timestamps/``, and everything else outside ``CODE_PATHS`` neither dirty the code nor block a resume. So
the author can commit the run files of a stopped session and resume it from the new commit. Manifests
still record the whole tree's dirty flag and paths (``bench.records.provenance``), for information only.

The code digest is the SHA-256 of what ``git ls-tree -r -z --full-tree <commit> -- <CODE_PATHS>`` prints:
mode, type, object id and path of every file under the code paths, in git's tree order. Two commits with
the same code have the same digest. A reviewer recomputes it for any commit with::

    git ls-tree -r -z --full-tree <commit> -- bench analysis references docker pyproject.toml uv.lock \\
        | sha256sum
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.integrity import git

# The code of a measurement. This is the only list; everything else in the checkout is not code.
CODE_PATHS: tuple[str, ...] = ("bench", "analysis", "references", "docker", "pyproject.toml", "uv.lock")
DIGEST_RULE = (
    "sha256 of `git ls-tree -r -z --full-tree <commit> -- " + " ".join(CODE_PATHS) + "` (mode, type, "
    "object id and path of every file under the code paths)"
)


def _status_paths(root: Path, paths: Sequence[str]) -> list[str]:
    """Paths with an uncommitted change (staged, unstaged or untracked and not ignored) under ``paths``;
    both names of a rename."""
    out = git.run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
    entries = [e for e in out.decode(errors="replace").split("\0") if e]
    found: list[str] = []
    i = 0
    while i < len(entries):
        entry = entries[i]
        found.append(entry[3:])
        if "R" in entry[:2] or "C" in entry[:2]:
            i += 1  # -z puts a rename's original path in the next entry, without a status
            if i < len(entries):
                found.append(entries[i])
        i += 1
    return sorted(set(found))


def code_dirty_paths(root: Path) -> list[str]:
    """Uncommitted changes under ``CODE_PATHS`` (empty: the code is clean)."""
    return _status_paths(root, CODE_PATHS)


def code_digest(root: Path, commit: str = "HEAD") -> str | None:
    """The code digest of ``commit`` (see the module docstring); None when the commit is unknown here."""
    out = git.run_git(root, "rev-parse", "--verify", "-q", f"{commit}^{{commit}}", check=False).strip()
    if not out:
        return None
    listing = git.run_git(root, "ls-tree", "-r", "-z", "--full-tree", out.decode(), "--", *CODE_PATHS)
    return hashlib.sha256(listing).hexdigest()


def code_record(root: Path) -> dict[str, Any]:
    """What a manifest records about the code: digest of HEAD, the paths, and their uncommitted changes."""
    if git.head_commit(root) is None:
        return {"code_digest": None, "code_paths": list(CODE_PATHS), "code_dirty_paths": None}
    return {
        "code_digest": code_digest(root),
        "code_paths": list(CODE_PATHS),
        "code_dirty_paths": code_dirty_paths(root)[:50],
    }


def require_clean_code(root: Path) -> dict[str, Any]:
    """Refuse to measure when the code has uncommitted changes (naming them); return ``code_record``.

    Outputs (``runs/``, ``results/``), ``DEVIATIONS.md``, ``timestamps/`` and other files outside
    ``CODE_PATHS`` do not count."""
    if git.head_commit(root) is None:
        raise BenchError(f"{root} is not a git checkout with a commit; measurements must name their code.")
    dirty = code_dirty_paths(root)
    if dirty:
        shown = ", ".join(dirty[:10]) + (f" and {len(dirty) - 10} more" if len(dirty) > 10 else "")
        raise BenchError(
            f"{root}: the code has uncommitted changes ({shown}); commit or remove them before measuring. "
            f"The code is {', '.join(CODE_PATHS)}; outputs under runs/ and results/ do not count."
        )
    return code_record(root)


def _session_digest(session_git: Mapping[str, Any], root: Path | None) -> str | None:
    digest = session_git.get("code_digest")
    if isinstance(digest, str):
        return digest
    commit = session_git.get("commit")  # a session recorded before the digest existed
    if isinstance(commit, str) and root is not None and git.is_repo(root):
        return code_digest(root, commit)
    return None


def changed_code_paths(root: Path, commit: str) -> list[str] | None:
    """Files under ``CODE_PATHS`` that differ between ``commit`` and HEAD; None when ``commit`` is unknown."""
    known = git.run_git(root, "rev-parse", "--verify", "-q", f"{commit}^{{commit}}", check=False).strip()
    if not known:
        return None
    out = git.run_git(root, "diff", "--name-only", "-z", known.decode(), "HEAD", "--", *CODE_PATHS)
    return sorted(p for p in out.decode(errors="replace").split("\0") if p)


def different_code(
    earlier: Iterable[Mapping[str, Any]], now: Mapping[str, Any], root: Path | None
) -> str | None:
    """Why this session's code differs from the earlier sessions' code, or None when it is the same.

    ``earlier`` and ``now`` are the ``git`` records of manifests (``bench.records.provenance``). Code is
    compared by digest; a session recorded without one is compared by the digest of its commit (when ``root``
    holds that commit), else by commit."""
    now_digest = _session_digest(now, root)
    now_commit = now.get("commit")
    for old in earlier:
        old_commit = old.get("commit")
        old_digest = _session_digest(old, root)
        if old_digest is not None and now_digest is not None:
            if old_digest == now_digest:
                continue
        elif old_commit == now_commit:
            continue
        changed = (
            changed_code_paths(root, old_commit)
            if root is not None and isinstance(old_commit, str) and git.is_repo(root)
            else None
        )
        if changed:
            shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
            what = f"these code paths differ from commit {old_commit}: {shown}"
        else:
            before = f"code digest {old_digest} (commit {old_commit})"
            what = f"{before} before, {now_digest} (commit {now_commit}) now"
        return what
    return None
