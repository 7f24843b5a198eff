"""The project's one atomic file write: a temporary file in the same folder, fsynced, renamed over the
target, then the folder fsynced. A reader (or a crash) sees the old file or the new one, never half of one.
And a folder's content built beside it and swapped in whole (:func:`built_beside`, ``analysis report``).

Lives in ``analysis`` because ``analysis`` may not import ``bench``; ``bench`` uses it too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path


def write_bytes_atomic(path: Path | str, data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` atomically; the file gets ``mode`` (mkstemp would leave 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def built_beside(out_dir: Path | str, owned: Collection[str]) -> Iterator[Path]:
    """Build a folder's content in a temporary folder beside ``out_dir`` and swap it in at the end.

    The caller writes into the yielded folder. If the block raises, nothing in ``out_dir`` changes and the
    temporary folder is removed. Otherwise every top-level entry of the build replaces the entry of the same
    name in ``out_dir``, and entries named in ``owned`` that the build did not produce are removed (so no file
    of an earlier build survives, e.g. a stage no longer present); other entries of ``out_dir`` (a rehearsal's
    runs and journal) are left alone. Each entry is swapped by rename; if a rename fails, the entries already
    swapped are put back.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".build"))
    try:
        os.chmod(build, 0o755)
        yield build
        if not out_dir.exists():
            os.rename(build, out_dir)
            _fsync_dir(out_dir.parent)
            return
        trash = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".old"))
        moved: list[tuple[Path, Path]] = []  # (from, to) in the order done, for the way back
        try:
            for name in sorted(set(owned) | {p.name for p in build.iterdir()}):
                old, new = out_dir / name, build / name
                if old.exists() or old.is_symlink():
                    os.rename(old, trash / name)
                    moved.append((old, trash / name))
                if new.exists():
                    os.rename(new, old)
                    moved.append((new, old))
        except BaseException:
            for src, dst in reversed(moved):
                os.rename(dst, src)
            raise
        finally:
            _fsync_dir(out_dir)
            shutil.rmtree(trash, ignore_errors=True)
    finally:
        shutil.rmtree(build, ignore_errors=True)
