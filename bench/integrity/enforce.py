"""Files read after the start-of-command check are checked again when opened.

``preflight`` records the files it verified (``activate``); readers of the bundled files and the hub
snapshots call ``require_locked(path)`` when they open a file. An unlisted file under the data folders
verified then is an error naming it; a listed file is hashed again (files under 64 MiB always, larger ones
when size, mtime or inode changed since the check) and must still match. Without a preflight in the process
(library use, tests) nothing is enforced. Kept apart from :mod:`bench.integrity.coverage` (which reads the
hub layouts): the readers import only this module and the lock (no import cycles).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.paths import hub_dir
from bench.integrity import datalock
from bench.integrity.bundled import BUNDLED

REHASH_BELOW = 64 * 2**20  # bytes; smaller files are hashed again at every open


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
