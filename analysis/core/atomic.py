"""The project's one atomic file write: a temporary file in the same folder, fsynced, renamed over the
target, then the folder fsynced. A reader (or a crash) sees the old file or the new one, never half of one.
The project's one JSON file format (:func:`json_bytes`, :func:`write_json_atomic`), the one folder fsync
(:func:`fsync_dir`), and a folder's content built beside it and swapped in whole (:func:`built_beside`,
``analysis report``) under a lock that one writer holds at a time (:func:`out_lock`).

The swap is whole at every step. On Linux ``<out>`` changes in one step: the build beside it
gets the report's new entries and, recreated, every entry of ``<out>`` the report does not own (hard links of
files, folders recreated, symlinks copied), and then ``renameat2(RENAME_EXCHANGE)`` exchanges build and
``<out>``; the old folder, now at the build's name, is removed. A journal ``.<out>.swap`` beside ``<out>``,
fsynced before the exchange, holds both folders' inode numbers, so a writer killed (SIGKILL, a power cut)
before the exchange leaves the complete old report (the next writer removes the build) and one killed after
it the complete new report (the next writer removes the old folder). Where the exchange is unavailable
(another OS, a libc without ``renameat2``, a filesystem that refuses it, ``<out>`` a symlink or ``.``, an
entry that cannot be hard-linked), the fallback renames each top-level entry in turn under a journal that
records every entry; a kill between two renames leaves a mix there until the next writer rolls it back to
the earlier content. SIGINT and SIGTERM are held back during either swap (they take effect once it is done,
so a signal never stops it halfway). Leftover ``.<out>.XXXXXXXX.build`` and ``.old`` folders of a killed
writer are removed, and named, by the next one.

Lives in ``analysis`` because ``analysis`` may not import ``bench``; ``bench`` uses it too (it is a leaf:
it imports nothing of the project).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import json
import math
import os
import re
import shutil
import signal
import sys
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
        record = json.loads(journal.read_text(encoding="ascii"))
        if record.get("exchange"):
            said += _recover_exchange(out_dir, record)
        else:
            _roll_back(out_dir, record)
            said.append(
                f"{journal}: an earlier writer of {out_dir} was killed while swapping its files in; "
                "the files it replaced are put back as they were, and this journal of the swap "
                "removed"
            )
        journal.unlink(missing_ok=True)
        fsync_dir(out_dir.parent)
    pattern = _leftover_pattern(out_dir)
    for entry in sorted(out_dir.parent.iterdir()):
        if pattern.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
            said.append(f"{entry}: removed, a folder left by an interrupted writer of {out_dir}")
        elif entry.name.startswith(f".{journal.name}.") and entry.name.endswith(".tmp") and entry.is_file():
            entry.unlink()  # a journal half-written when its writer was killed (never renamed into place)
            said.append(f"{entry}: removed, a file left by an interrupted writer of {out_dir}")
    return said


def _recover_exchange(out_dir: Path, record: dict[str, Any]) -> list[str]:
    """Finish an exchange (:func:`_swap_whole`) whose writer was killed: ``out_dir``'s inode tells whether
    the exchange happened. Before it, ``out_dir`` is the earlier report, whole, and the build is removed
    (its hard links only: the files stay in ``out_dir``); after it, ``out_dir`` is the new report, whole, and
    the old folder at the build's name is removed (:func:`_finish_exchange`)."""
    journal, build = _journal_path(out_dir), out_dir.parent / record["build"]
    exchanged = out_dir.is_dir() and os.lstat(out_dir).st_ino == record["build_ino"]
    if not exchanged:
        shutil.rmtree(build, ignore_errors=True)
        return [
            f"{journal}: an earlier writer of {out_dir} was killed before it swapped its report in; "
            f"{out_dir} is the earlier report, unchanged; its build {build} and this journal removed"
        ]
    said = _finish_exchange(out_dir, record)
    return [
        f"{journal}: an earlier writer of {out_dir} was killed after it swapped its report in; {out_dir} "
        f"is that new report, whole; the earlier report's folder {build} and this journal removed",
        *said,
    ]


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


def sync_tree(root: Path) -> None:
    """fsync every file and folder under ``root`` (its files first, then the folders, deepest first), so a
    build swapped in by :func:`built_beside` survives a power cut with the bytes it was swapped in with:
    files written without an fsync of their own (a figure, a file rewritten in place by
    ``analysis.reporting.codeinfo.stamp_tree``) would otherwise be written back some time after the swap."""
    folders: list[str] = []
    for folder, _dirs, files in os.walk(root):
        folders.append(folder)
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    for folder in reversed(folders):
        fsync_dir(folder)


@contextmanager
def built_beside(out_dir: Path | str, owned: Collection[str]) -> Iterator[Path]:
    """Build a folder's content in a temporary folder beside ``out_dir`` and swap it in at the end.

    The caller writes into the yielded folder (and should hold :func:`out_lock`). If the block raises,
    nothing in ``out_dir`` changes and the temporary folder is removed. Otherwise every top-level entry of
    the build replaces the entry of the same name in ``out_dir``, and entries named in ``owned`` that the
    build did not produce are removed (so no file of an earlier build survives, e.g. a stage no longer
    present); other entries of ``out_dir`` (a rehearsal's runs and journal) are kept.

    On Linux ``out_dir`` changes in one step (:func:`_swap_whole`): the kept entries are recreated in the
    build (hard links of files, so the same inodes; folders recreated with their mode; symlinks copied), then
    build and ``out_dir`` are exchanged by ``renameat2(RENAME_EXCHANGE)`` and the old folder removed. Where
    the exchange is unavailable (no ``renameat2`` in the C library, another OS, a filesystem that refuses it,
    ``out_dir`` a symlink (its target's entries are swapped, the link stays), ``out_dir`` given as ``.`` (the
    build then lies inside it), an entry that cannot be linked or chowned), the fallback is :func:`_swap`:
    each entry swapped by rename under a journal, a kill between two renames rolled back by the next writer.
    SIGINT/SIGTERM are held back during either swap (module docstring).
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".build"))
    try:
        os.chmod(build, 0o755)
        yield build
        sync_tree(build)
        with _signals_held():
            if not out_dir.exists():
                _rename(build, out_dir)
                fsync_dir(out_dir.parent)
                return
            if not _swap_whole(out_dir, build, owned):
                _swap(out_dir, build, owned)
    finally:
        with _signals_held():
            if not _journal_path(out_dir).exists():  # a journal left: the next writer finishes from it
                shutil.rmtree(build, ignore_errors=True)


RENAME_EXCHANGE = 2
"""``renameat2`` flag (linux/fs.h): exchange two paths atomically, both must exist."""
_AT_FDCWD = -100
_NO_EXCHANGE = {errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.EOPNOTSUPP, errno.ENOTSUP}
"""What ``renameat2`` answers where the exchange is unavailable: the fallback swap runs instead."""


@functools.cache
def _renameat2() -> Any:
    """``renameat2`` of the C library through ctypes (glibc >= 2.28), or None (another OS, an older libc)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: Path, b: Path) -> None:
    """Exchange ``a`` and ``b`` in one step; a test seam counts this with the renames and journal writes."""
    fn = _renameat2()
    if fn is None:
        raise OSError(errno.ENOSYS, "renameat2 is not in this C library", str(a))
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a), None, str(b))


def _write_journal(journal: Path, record: dict[str, Any]) -> None:
    """The journal of an exchange, fsynced before it (a test seam counts this step)."""
    write_json_atomic(journal, record)


def _swap_whole(out_dir: Path, build: Path, owned: Collection[str]) -> bool:
    """Replace ``out_dir`` by ``build`` in one step (``renameat2(RENAME_EXCHANGE)``), the entries the report
    does not own recreated in the build first (:func:`_mirror`); False (nothing changed, the build as the
    caller left it) where that is unavailable, so the caller falls back to :func:`_swap`.

    The journal, written before the exchange, holds both folders' inode numbers: a writer killed after it
    is finished by the next one (:func:`recover`), which tells by ``out_dir``'s inode whether the exchange
    happened (then it removes the old folder, now at the build's name) or not (then the build)."""
    if out_dir.is_symlink() or _renameat2() is None or not out_dir.is_dir():
        return False
    if out_dir.resolve() in build.resolve().parents:  # `--out .`: the build lies inside it, not beside
        return False
    report = sorted(set(owned) | {p.name for p in build.iterdir()})
    try:
        _mirror(out_dir, build, set(report))
    except OSError:  # an entry that cannot be linked here (another filesystem, another owner)
        _unmirror(build, set(report))
        return False
    journal = _journal_path(out_dir)
    record = {
        "exchange": True,
        "build": build.name,
        "report": report,
        "out_ino": os.lstat(out_dir).st_ino,
        "build_ino": os.lstat(build).st_ino,
    }
    _write_journal(journal, record)
    try:
        _exchange(build, out_dir)
    except OSError as exc:
        journal.unlink(missing_ok=True)
        fsync_dir(out_dir.parent)
        if exc.errno not in _NO_EXCHANGE:
            raise
        _unmirror(build, set(report))
        return False
    fsync_dir(out_dir.parent)
    for line in _finish_exchange(out_dir, record):
        print(f"Warning: {line}", file=sys.stderr)
    return True


def _mirror(src: Path, dst: Path, skip: Collection[str] = ()) -> None:
    """Recreate ``src``'s entries (but ``skip``) in the folder ``dst`` on the same filesystem: files (and
    FIFOs, sockets) as hard links, folders recreated (mode, times; the owner checked), symlinks copied; then
    ``dst`` gets ``src``'s mode and times. Raises OSError where an entry cannot be recreated so."""
    st = os.lstat(src)
    if (st.st_uid, st.st_gid) != (os.lstat(dst).st_uid, os.lstat(dst).st_gid):
        os.chown(dst, st.st_uid, st.st_gid)  # PermissionError: not ours to recreate; the fallback swap
    with os.scandir(src) as it:
        for entry in sorted(it, key=lambda e: e.name):
            if entry.name in skip:
                continue
            target = dst / entry.name
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            elif entry.is_dir(follow_symlinks=False):
                os.mkdir(target)
                _mirror(Path(entry.path), target)
            else:
                os.link(entry.path, target, follow_symlinks=False)
    shutil.copystat(src, dst, follow_symlinks=False)


def _unmirror(build: Path, report: Collection[str]) -> None:
    """Remove what :func:`_mirror` put into ``build`` (every entry not in ``report``); links only, so the
    files themselves stay in ``--out``."""
    for entry in build.iterdir():
        if entry.name not in report:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    os.chmod(build, 0o755)


def _finish_exchange(out_dir: Path, record: dict[str, Any]) -> list[str]:
    """After the exchange: remove the old folder (at the build's name) and the journal. Its report entries
    go; each other entry is removed only where ``out_dir`` holds the same (inode, or symlink target); one
    changed or added there after :func:`_mirror` (by someone else, in the milliseconds between) is moved
    into ``out_dir``. What cannot be moved is kept, in a folder named in the returned lines."""
    old = out_dir.parent / record["build"]
    said: list[str] = []
    try:
        _discard_old(old, out_dir, record["report"])
    except OSError as exc:
        return [
            f"{old}: the earlier report's folder could not be removed ({exc.strerror or exc}); the next "
            f"writer of {out_dir} removes it"
        ]
    if old.exists():
        kept = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".kept"))
        os.rename(old, kept / old.name)
        said.append(
            f"{kept}: entries of {out_dir} changed while the report swapped it in, kept here; move "
            "what you need back into it"
        )
    _journal_path(out_dir).unlink(missing_ok=True)
    fsync_dir(out_dir.parent)
    return said


def _discard_old(old: Path, new: Path, report: Collection[str]) -> None:
    """Remove the folder ``old`` (exchanged out of ``new``'s place): its ``report`` entries, and each other
    entry that ``new`` holds the same; a different one is moved into ``new``; a conflict (a folder against a
    file) is left in ``old``, which then stays."""
    if not old.exists():
        return
    for entry in sorted(old.iterdir()):
        if entry.name in report:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        else:
            _merge_back(entry, new / entry.name)
    with contextlib.suppress(OSError):  # not empty: a conflict kept
        old.rmdir()


def _merge_back(src: Path, dst: Path) -> None:
    """``src`` (in the old folder) against ``dst`` (its copy in the new one): removed where the same, moved
    into the new folder where different or missing, left where a folder meets a file."""
    if not (dst.exists() or dst.is_symlink()):
        os.rename(src, dst)
    elif src.is_dir() and not src.is_symlink():
        if dst.is_dir() and not dst.is_symlink():
            for entry in sorted(src.iterdir()):
                _merge_back(entry, dst / entry.name)
            with contextlib.suppress(OSError):
                src.rmdir()
    elif src.is_symlink():
        if dst.is_symlink() and os.readlink(src) == os.readlink(dst):
            src.unlink()
        elif not dst.is_dir() or dst.is_symlink():
            os.rename(src, dst)
    elif (os.lstat(src).st_ino, os.lstat(src).st_dev) == (os.lstat(dst).st_ino, os.lstat(dst).st_dev):
        src.unlink()
    elif not dst.is_dir() or dst.is_symlink():
        os.rename(src, dst)


def _swap(out_dir: Path, build: Path, owned: Collection[str]) -> None:
    """The fallback swap (no ``renameat2`` exchange here): each top-level entry renamed in turn, under a
    journal; a failed rename is rolled back at once, a kill between two renames by the next writer."""
    trash = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".old"))
    entries = [
        (name, (out_dir / name).exists() or (out_dir / name).is_symlink(), (build / name).exists())
        for name in sorted(set(owned) | {p.name for p in build.iterdir()})
    ]
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
