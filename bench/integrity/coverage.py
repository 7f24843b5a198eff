"""datasets.lock must cover every data file the study reads, and each file is checked again when opened.

Plan section "Data": files are checked against datasets.lock at the start of every measuring command. Two
gaps closed here (issue 9, item 21):

- **A shortened lock.** ``verify`` refuses an empty lock, and a lock that lacks an entry for a file the
  study reads: every file under ``data/bundled`` (except SOURCES.md), every expected file of a hub dataset
  that is verified, and every file of a fetched hub snapshot that matches the dataset's patterns.
- **Files read after the check.** ``preflight`` records the files it verified (``activate``); readers of
  the bundled files and the hub snapshots call ``require_locked(path)`` when they open a file. An unlisted
  file under the data folders verified then is an error naming it; a listed file is hashed again (files
  under 64 MiB always, larger ones when size, mtime or inode changed since the check) and must still match.
  Without a preflight in the process (library use, tests) nothing is enforced.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.errors import BenchError
from bench.hints import hint
from bench.integrity import datalock

REHASH_BELOW = 64 * 2**20  # bytes; smaller files are hashed again at every open


def required_files(root: Path, names: Iterable[str] | None) -> dict[str, Path]:
    """Entry id -> file for every file the lock must list for ``names`` (all datasets when None)."""
    from bench.integrity import hub
    from bench.integrity.bundled import BUNDLED

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


@dataclass
class _Active:
    root: Path
    lock_path: Path
    entries: dict[Path, tuple[str, datalock.Entry]]  # resolved file -> (entry id, entry)
    folders: tuple[Path, ...]  # data folders whose files must be listed
    seen: dict[Path, tuple[int, int, int]] = field(default_factory=dict)  # file -> (size, mtime_ns, ino)


_ACTIVE: _Active | None = None


def activate(root: Path, lock_path: Path, verified: Iterable[str]) -> None:
    """Called by ``preflight`` after verifying: from now on ``require_locked`` enforces this lock."""
    from bench.integrity.bundled import BUNDLED
    from bench.paths import hub_dir

    global _ACTIVE
    entries = datalock.read_lock(lock_path)
    by_file = {e.file(root).resolve(): (k, e) for k, e in entries.items()}
    active = _Active(root, lock_path, by_file, ((root / BUNDLED).resolve(), hub_dir().resolve()))
    for key in verified:
        file = entries[key].file(root)
        st = file.stat()
        active.seen[file.resolve()] = (st.st_size, st.st_mtime_ns, st.st_ino)
    _ACTIVE = active


def deactivate() -> None:
    global _ACTIVE
    _ACTIVE = None


def require_locked(path: Path) -> Path:
    """``path``, after checking it against the lock that ``preflight`` verified (no-op without one)."""
    active = _ACTIVE
    if active is None:
        return path
    file = Path(path).resolve()
    if not any(file.is_relative_to(folder) for folder in active.folders):
        return path  # not a data file of the study (a rehearsal's --dataset folder, a test's tmp data)
    hit = active.entries.get(file)
    if hit is None:
        raise BenchError(
            f"{path} is read by this command but not listed in {active.lock_path}. Every data file the study "
            f"reads must be locked: restore the lock with git, or lock the file with `{hint('data lock')}`."
        )
    key, entry = hit
    st = os.stat(file)
    if st.st_size < REHASH_BELOW or active.seen.get(file) != (st.st_size, st.st_mtime_ns, st.st_ino):
        problem = datalock.check_entry(key, entry, active.root)
        if problem is not None:
            raise BenchError(
                f"{problem} (checked when opened, after the start-of-command check). Restore the file; "
                "a changed input is never re-locked silently."
            )
        active.seen[file] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return path

