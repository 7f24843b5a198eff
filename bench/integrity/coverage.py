"""datasets.lock must cover every data file the study reads, and each file is checked again when opened.

Plan section "Data": files are checked against datasets.lock at the start of every measuring command. Two
gaps closed here:

- **A shortened lock.** ``verify`` refuses an empty lock, and a lock that lacks an entry for a file the
  study reads: every file under ``data/bundled`` (except SOURCES.md), every expected file of a hub dataset
  that is verified, and every file of a fetched hub snapshot that matches the dataset's patterns.
- **Files read after the check.** ``preflight`` records the files it verified
  (:func:`bench.integrity.enforce.activate`); readers call :func:`bench.integrity.enforce.require_locked`
  when they open a file (that module says how).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.progress import Progress
from bench.integrity import datalock, hub
from bench.integrity.bundled import BUNDLED


def required_files(root: Path, names: Iterable[str] | None) -> dict[str, Path]:
    """Entry id -> file for every file the lock must list for ``names`` (all datasets when None)."""
    chosen = list(names) if names is not None else ["bundled", *hub.HUB_DATASETS]
    out: dict[str, Path] = {}
    for name in chosen:
        if name == "bundled":
            for file in sorted((root / BUNDLED).rglob("*")):
                if file.is_file() and file.name != "SOURCES.md":
                    out[file.relative_to(root).as_posix()] = file
            continue
        ds = hub.HUB_DATASETS.get(name)
        if ds is None:
            continue  # an entry id, not a dataset name: ``datalock.select`` already found it
        wanted = set(hub.local_files(ds))
        if names is not None:  # a dataset the command reads: its expected files even if not fetched
            wanted |= {p for p in ds.expected if "*" not in p}
        for rel in sorted(wanted):
            out[hub.entry_id(ds.source, rel)] = hub.snapshot_dir(ds.source) / rel
    return out


def check_coverage(root: Path, names: Iterable[str] | None, lock_path: Path) -> None:
    """BenchError for an empty lock, or one that lacks an entry for a file the study reads."""
    entries = datalock.read_lock(lock_path)
    if not entries:
        raise BenchError(
            f"{lock_path}: the lock lists no files. Every data file the study reads must be listed; "
            f"restore the lock with git (it is written only by `{hint('data lock')}`)."
        )
    listed = {e.file(root).resolve() for e in entries.values()} | set(entries)
    missing = [
        f"{file} ({key})"
        for key, file in required_files(root, names).items()
        if key not in listed and file.resolve() not in listed
    ]
    if missing:
        lines = "\n  ".join(missing)
        raise BenchError(
            f"{lock_path} does not list {len(missing)} file(s) the study reads:\n  {lines}\n"
            "The lock was shortened or a file was added; restore the lock with git, or lock new files with "
            f"`{hint('data lock')}` (a changed input is a deviation, never a silent re-lock)."
        )


def verify(
    root: Path,
    names: Iterable[str] | None = None,
    *,
    lock_path: Path | None = None,
    show_progress: bool = True,
) -> dict[str, datalock.Entry]:
    """Stream every selected file through SHA-256; BenchError naming every missing / wrong-size / wrong-hash
    file. Returns the verified entries."""
    lock_path = lock_path or root / datalock.LOCK_NAME
    names = list(names) if names is not None else None
    chosen = datalock.select(datalock.read_lock(lock_path), names, lock_path)
    check_coverage(root, names, lock_path)  # an empty or shortened lock is refused
    total = sum(e.size for e in chosen.values())
    problems: list[datalock.Problem] = []
    if show_progress:
        with Progress("verifying datasets.lock", total // 2**20 or None, "MiB", interval=5.0) as bar:
            carry = [0]

            def on_bytes(n: int) -> None:
                carry[0] += n
                if carry[0] >= 2**20:
                    bar.advance(carry[0] // 2**20)
                    carry[0] %= 2**20

            for key in sorted(chosen):
                problem = datalock.check_entry(key, chosen[key], root, on_bytes)
                if problem is not None:
                    problems.append(problem)
    else:
        problems = [p for k in sorted(chosen) if (p := datalock.check_entry(k, chosen[k], root)) is not None]
    if problems:
        lines = "\n  ".join(str(p) for p in problems)
        raise BenchError(
            f"{len(problems)} of {len(chosen)} files do not match {lock_path}:\n  {lines}\n"
            f"Fetch missing files with `{hint('data fetch')}`; a changed file must be restored, never "
            "re-locked."
        )
    return chosen
