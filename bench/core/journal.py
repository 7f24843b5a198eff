"""Append-only, crash-safe JSONL journal of the quality phase (plan sections "Quality", "Latency").

One JSON object per line, one line per unit of work, keyed by ``(stage, model, depth, qid)``. Every
record is flushed and fsynced before ``append`` returns, so after a crash (SIGKILL, power loss) the file
holds every completed record and at most one torn last line. On open:

- a torn last line (no trailing newline, or a last line that does not decode) is dropped: the file is
  truncated to the end of the last good line and the drop is reported on stderr;
- a malformed *earlier* line is an error naming the file and line (that is not a crash artefact, it is
  damage, and resuming over it would hide it);
- a duplicate key is an error (two writers, or a hand edit), except that a record marked ``"retry": true``
  (a failure worth another attempt, e.g. an API that stayed unavailable) may be superseded by one later
  record of the same key. The earlier attempt stays in the file and in ``superseded``; ``records`` and
  ``get`` show the latest attempt, at the place of the first.

Floats are written with ``repr`` (Python's ``json`` does this), so every score read back is the same
binary64 value that was written; non-finite numbers are refused (they are not JSON). An exclusive
``flock`` keeps a second process from appending to the same journal at the same time.

The journal knows nothing of rerankers or stages beyond the four key fields; the quality phase decides
what a record holds (see ``bench.quality.phase``).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from analysis.core.atomic import fsync_dir
from bench.core.errors import BenchError

KEY_FIELDS: tuple[str, str, str, str] = ("stage", "model", "depth", "qid")
Key = tuple[str, str, int, str]


class JournalError(BenchError):
    """A journal that cannot be resumed safely (damaged earlier line, duplicate key, second writer)."""


def record_key(record: Mapping[str, Any]) -> Key:
    """The ``(stage, model, depth, qid)`` key of a record; ``ValueError`` for a missing or bad field."""
    missing = [f for f in KEY_FIELDS if f not in record]
    if missing:
        raise ValueError(f"record lacks key field(s) {', '.join(missing)}")
    stage, model, depth, qid = (record[f] for f in KEY_FIELDS)
    if not isinstance(stage, str) or not isinstance(model, str) or not isinstance(qid, str):
        raise ValueError("stage, model and qid must be strings")
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise ValueError(f"depth must be an integer, got {depth!r}")
    return (stage, model, depth, qid)


def encode(record: Mapping[str, Any]) -> bytes:
    """One journal line (with its newline). Full float precision; NaN and infinity are refused."""
    try:
        text = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as exc:
        raise ValueError(f"journal records must hold finite numbers only: {exc}") from exc
    return text.encode("utf-8") + b"\n"


class Journal:
    """An open journal: ``records`` in file order, ``completed`` keys, ``append`` (fsynced).

    Use as a context manager (or call ``close``). Opening creates the file if it does not exist.
    """

    def __init__(self, path: Path, *, stream: TextIO | None = None) -> None:
        self.path = Path(path)
        self._stream = stream if stream is not None else sys.stderr
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        self._fh = open(self.path, "a+b")  # held open for appends; closed in close()
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._fh.close()
            raise JournalError(
                f"{self.path}: another process is writing this journal; wait for it to finish or stop it "
                "before resuming"
            ) from exc
        if created:
            fsync_dir(self.path.parent)
        self.dropped_torn_line: bytes | None = None
        self._records: list[dict[str, Any]] = []
        self._lines: list[int] = []  # file line of each record in ``_records``
        self._index: dict[Key, int] = {}
        self.superseded: list[dict[str, Any]] = []  # earlier attempts replaced by a retry
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    # -- reading ---------------------------------------------------------------------------------------

    def _load(self) -> None:
        self._fh.seek(0)
        data = self._fh.read()
        lines = data.split(b"\n")
        # ``data.split`` leaves ``b""`` after a final newline; anything else there is a torn tail.
        tail = lines.pop()
        good_end = len(data) - len(tail)
        torn: bytes | None = tail if tail else None
        if torn is None and lines:
            try:
                json.loads(lines[-1])
            except (UnicodeDecodeError, json.JSONDecodeError):
                torn = lines.pop() + b"\n"
                good_end -= len(torn)
        for number, raw in enumerate(lines, start=1):
            self._add_loaded(raw, number)
        if torn is not None:
            self._fh.truncate(good_end)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self.dropped_torn_line = torn
            print(
                f"journal {self.path}: dropped a torn last line ({len(torn)} bytes, line {len(lines) + 1}) "
                "left by an interrupted write; that unit of work will be redone",
                file=self._stream,
                flush=True,
            )

    def _add_loaded(self, raw: bytes, number: int) -> None:
        where = f"{self.path}, line {number}"
        try:
            record = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise JournalError(
                f"{where}: not a JSON object ({exc}). Only the last line may be torn by a crash; an "
                "earlier damaged line means the file was edited or corrupted. Restore it or start a new "
                "study directory."
            ) from exc
        if not isinstance(record, dict):
            raise JournalError(f"{where}: expected a JSON object, got {type(record).__name__}")
        try:
            key = record_key(record)
        except ValueError as exc:
            raise JournalError(f"{where}: {exc}") from exc
        if key in self._index and not self._may_supersede(key):
            first = self._lines[self._index[key]]
            raise JournalError(f"{where}: duplicate record for {key} (first at line {first})")
        self._put(key, record, number)

    def _may_supersede(self, key: Key) -> bool:
        return self._records[self._index[key]].get("retry") is True

    def _put(self, key: Key, record: dict[str, Any], line: int) -> None:
        if key in self._index:  # a retry of a failed attempt: keep the old one, show the new one
            i = self._index[key]
            self.superseded.append(self._records[i])
            self._records[i] = record
            self._lines[i] = line
            return
        self._index[key] = len(self._records)
        self._records.append(record)
        self._lines.append(line)

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every record in file order (a copy of the list; do not mutate the records)."""
        return list(self._records)

    @property
    def completed(self) -> frozenset[Key]:
        """Keys with a final record (a record marked ``retry`` is not final)."""
        return frozenset(k for k, i in self._index.items() if self._records[i].get("retry") is not True)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self._records))

    def get(self, key: Key) -> dict[str, Any] | None:
        i = self._index.get(key)
        return None if i is None else self._records[i]

    # -- writing ---------------------------------------------------------------------------------------

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record, flush and fsync it; refuses a key that is already in the journal."""
        if self._fh.closed:
            raise ValueError(f"journal {self.path} is closed")
        key = record_key(record)
        if key in self._index and not self._may_supersede(key):
            raise JournalError(f"journal {self.path}: {key} is already recorded")
        line = encode(record)
        # Round-trip now so that what a resume reads is exactly what is kept in memory.
        stored = json.loads(line)
        self._fh.seek(0, os.SEEK_END)
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._put(key, stored, len(self._records) + len(self.superseded) + 1)

    def close(self) -> None:
        if not self._fh.closed:
            try:
                fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            finally:
                self._fh.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
