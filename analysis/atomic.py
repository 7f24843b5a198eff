"""The project's one atomic file write: a temporary file in the same folder, fsynced, renamed over the
target, then the folder fsynced. A reader (or a crash) sees the old file or the new one, never half of one.
The project's one JSON file format (:func:`json_bytes`, :func:`write_json_atomic`), the one folder fsync
(:func:`fsync_dir`), and a folder's content built beside it and swapped in whole (:func:`built_beside`,
``analysis report``).

Lives in ``analysis`` because ``analysis`` may not import ``bench``; ``bench`` uses it too (it is a leaf:
it imports nothing of the project).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

JSON_INDENT = 1
"""Every JSON file the project writes: indent 1, keys sorted, ASCII only (non-ASCII as ``\\u`` escapes, so
the bytes do not depend on an editor's encoding), NaN and infinity refused, one trailing newline."""


class NonFiniteJSONError(ValueError):
    """A NaN or an infinity on its way into a JSON file (JSON has no such numbers)."""


def _non_finite_at(obj: Any, where: str = "$") -> str | None:
    """The JSON path of the first NaN/infinity in ``obj`` (dicts, lists, tuples, floats), or None."""
    if isinstance(obj, float):
        return None if math.isfinite(obj) else where
    if isinstance(obj, dict):
        for key, value in obj.items():
            found = _non_finite_at(value, f"{where}.{key}")
            if found is not None:
                return found
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            found = _non_finite_at(value, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def json_bytes(
    obj: Any, *, default: Callable[[Any], Any] | None = None, path: Path | str | None = None
) -> bytes:
    """``obj`` in the project's one JSON format (:data:`JSON_INDENT`), with its trailing newline.

    A NaN or an infinity raises :class:`NonFiniteJSONError` naming the file (``path``, when given) and where
    in ``obj`` the number is, so the caller records null with a reason instead. ``default`` converts objects
    JSON does not know (``str`` for paths, as ``json.dumps`` does).
    """
    try:
        text = json.dumps(
            obj, indent=JSON_INDENT, sort_keys=True, ensure_ascii=True, allow_nan=False, default=default
        )
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
        where = _non_finite_at(obj) or "a value"
        name = f"{path}: " if path is not None else ""
        raise NonFiniteJSONError(
            f"{name}refusing to write NaN or infinity at {where}: JSON has no such number; record null "
            "with a reason instead"
        ) from exc
    return (text + "\n").encode("ascii")


def write_json_atomic(path: Path | str, obj: Any, *, default: Callable[[Any], Any] | None = None) -> None:
    """Write ``obj`` to ``path`` atomically in the project's one JSON format (:func:`json_bytes`)."""
    write_bytes_atomic(path, json_bytes(obj, default=default, path=path))


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
    fsync_dir(path.parent)


def fsync_dir(path: Path | str) -> None:
    """fsync a folder, so a rename or a new file in it survives a crash (the entry lives in the folder)."""
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
            fsync_dir(out_dir.parent)
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
            fsync_dir(out_dir)
            shutil.rmtree(trash, ignore_errors=True)
    finally:
        shutil.rmtree(build, ignore_errors=True)
