"""The project's one atomic file write: a temporary file in the same folder, fsynced, renamed over the
target, then the folder fsynced. A reader (or a crash) sees the old file or the new one, never half of one.
The project's one JSON file format (:func:`json_bytes`, :func:`write_json_atomic`), the one folder fsync
(:func:`fsync_dir`), and a folder's content built beside it and swapped in whole (:func:`built_beside`,
``analysis report``) under a lock that one writer holds at a time (:func:`out_lock`).

The swap of a folder's entries is recoverable at every step (issue 41): before its first rename a journal
``.<out>.swap`` beside ``<out>`` records (fsynced) the build folder, the trash folder and every entry with
whether an old and a new one exist. SIGINT and SIGTERM are held back during the swap (they take effect once
it is done, so a signal never stops it halfway); a failed rename, or a kill (SIGKILL, a power cut) that
leaves the journal behind, is rolled back to the earlier content from the journal, in the process itself or
by the next writer that takes the lock. Leftover ``.<out>.XXXXXXXX.build`` and ``.old`` folders of a killed
writer are removed, and named, by the next one.

Lives in ``analysis`` because ``analysis`` may not import ``bench``; ``bench`` uses it too (it is a leaf:
it imports nothing of the project).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shutil
import signal
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
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a full disk: name the file being written, not a temporary one
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
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


SWAP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Held back during a swap: they take effect once the swap is done."""


def _rename(src: Path, dst: Path) -> None:
    """Every rename of a swap (and of its roll-back); a test seam counts these and sends signals at each."""
    os.rename(src, dst)


def _journal_path(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.swap"


def _lock_path(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.lock"


def _leftover_pattern(out_dir: Path) -> re.Pattern[str]:
    """The names ``tempfile.mkdtemp`` gives a build or trash folder of ``out_dir`` (8 of a-z 0-9 _)."""
    return re.compile(rf"\.{re.escape(out_dir.name)}\.[a-z0-9_]{{8}}\.(build|old)")


class OutLockedError(RuntimeError):
    """Another writer holds the lock of this ``--out``; the message names it and the fix."""


@contextmanager
def out_lock(out_dir: Path | str, what: str = "analysis report") -> Iterator[list[str]]:
    """Hold the one writer's lock of ``out_dir`` (``fcntl.flock`` on ``.<out>.lock`` beside it), recover an
    interrupted swap and remove leftovers; yields the lines that say what was recovered or removed.

    A second writer refuses at once (:class:`OutLockedError`) instead of waiting: two reports into one
    folder at once is a mistake (the later would silently replace the one just written), and a refusal says
    so while waiting would hide it. The lock file is removed on release (a writer that finds its lock file
    replaced while it waited takes the lock again on the new one)."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    path = _lock_path(out_dir)
    fd = _take_lock(path, out_dir, what)
    try:
        yield [*recover(out_dir)]
    finally:
        Path(path).unlink(missing_ok=True)
        os.close(fd)


def _take_lock(path: Path, out_dir: Path, what: str) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise OutLockedError(
                f"{out_dir}: another {what} (pid {holder}) is writing into this folder now (lock {path}); "
                "two at once would mix their files. Fix: wait for it to finish, or choose another --out"
            ) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            return fd
        os.close(fd)  # the holder removed the file as we took the lock on it: take the new one


def recover(out_dir: Path | str) -> list[str]:
    """Roll back a swap of ``out_dir`` that a killed writer left (its journal), then remove leftover build
    and trash folders; the lines say what was done. Call only while holding :func:`out_lock`."""
    out_dir = Path(out_dir)
    said: list[str] = []
    journal = _journal_path(out_dir)
    if journal.exists():
        _roll_back(out_dir, json.loads(journal.read_text(encoding="ascii")))
        journal.unlink()
        fsync_dir(out_dir.parent)
        said.append(f"{journal}: an earlier writer of {out_dir} was killed while swapping its files in; the "
                    "files it replaced are put back as they were, and this journal of the swap removed")
    pattern = _leftover_pattern(out_dir)
    for entry in sorted(out_dir.parent.iterdir()):
        if pattern.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
            said.append(f"{entry}: removed, a folder left by an interrupted writer of {out_dir}")
        elif entry.name.startswith(f".{journal.name}.") and entry.name.endswith(".tmp") and entry.is_file():
            entry.unlink()  # a journal half-written when its writer was killed (never renamed into place)
            said.append(f"{entry}: removed, a file left by an interrupted writer of {out_dir}")
    return said


def _roll_back(out_dir: Path, journal: dict[str, Any]) -> None:
    """Put every entry the journal names back as it was before the swap (a step already undone, or never
    done, is skipped, so this may itself be interrupted and run again)."""
    build, trash = out_dir.parent / journal["build"], out_dir.parent / journal["trash"]
    for name, had_old, has_new in reversed(journal["entries"]):
        old, parked, new = out_dir / name, trash / name, build / name
        old_parked = parked.exists() or parked.is_symlink()
        if has_new and (old.exists() or old.is_symlink()) and (old_parked or not had_old):
            if not (new.exists() or new.is_symlink()) and build.is_dir():
                _rename(old, new)  # the new entry back into the build (removed with it)
            elif old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()
        if had_old and old_parked:
            _rename(parked, old)
    if out_dir.is_dir():
        fsync_dir(out_dir)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive in the block are recorded and raised again when it ends, through the
    handlers in place before it (Python runs signal handlers in the main thread; elsewhere this holds
    nothing back). A mask (``pthread_sigmask``) would not do: another thread (numpy's) takes the signal."""
    got: list[int] = []
    try:
        before = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in SWAP_SIGNALS}
    except ValueError:  # not the main thread: no handler of ours can run here
        yield
        return
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(got):
            signal.raise_signal(signum)


@contextmanager
def built_beside(out_dir: Path | str, owned: Collection[str]) -> Iterator[Path]:
    """Build a folder's content in a temporary folder beside ``out_dir`` and swap it in at the end.

    The caller writes into the yielded folder (and should hold :func:`out_lock`). If the block raises,
    nothing in ``out_dir`` changes and the temporary folder is removed. Otherwise every top-level entry of
    the build replaces the entry of the same name in ``out_dir``, and entries named in ``owned`` that the
    build did not produce are removed (so no file of an earlier build survives, e.g. a stage no longer
    present); other entries of ``out_dir`` (a rehearsal's runs and journal) are left alone. Each entry is
    swapped by rename, under a journal and with SIGINT/SIGTERM held back (module docstring); if a rename
    fails, the entries already swapped are put back.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".build"))
    try:
        os.chmod(build, 0o755)
        yield build
        with _signals_held():
            if not out_dir.exists():
                _rename(build, out_dir)
                fsync_dir(out_dir.parent)
                return
            _swap(out_dir, build, owned)
    finally:
        with _signals_held():
            shutil.rmtree(build, ignore_errors=True)


def _swap(out_dir: Path, build: Path, owned: Collection[str]) -> None:
    trash = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".old"))
    entries = [(name, (out_dir / name).exists() or (out_dir / name).is_symlink(), (build / name).exists())
               for name in sorted(set(owned) | {p.name for p in build.iterdir()})]
    journal = _journal_path(out_dir)
    fsync_dir(trash)
    write_json_atomic(journal, {"build": build.name, "trash": trash.name, "entries": entries})
    try:
        for name, had_old, has_new in entries:
            if had_old:
                _rename(out_dir / name, trash / name)
            if has_new:
                _rename(build / name, out_dir / name)
        fsync_dir(out_dir)
    except BaseException:
        _roll_back(out_dir, {"build": build.name, "trash": trash.name, "entries": entries})
        raise
    finally:
        journal.unlink(missing_ok=True)
        fsync_dir(out_dir.parent)
        shutil.rmtree(trash, ignore_errors=True)
