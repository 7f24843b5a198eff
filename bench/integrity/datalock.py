"""``datasets.lock``: every dataset file the study reads, with source, size, SHA-256 and row count.

Plan section: Data ("Files are checked against datasets.lock (SHA-256; row counts were checked when the lock
was written) at the start of every measuring command").

File format (JSON, UTF-8, keys sorted, written only by ``bench data lock``)::

    {"format": "datasets.lock/1",
     "about": "...",
     "entries": {"<entry id>": {
         "dataset": "bundled" | a name of bench.integrity.hub.HUB_DATASETS,
         "base": "repo" | "hub",       # path relative to the repository root / bench.core.paths.hub_dir()
         "path": "<relative path>",
         "source": {"repo": "owner/name", "revision": "<commit>", "path": "<path in that repo>",
                    "host": "github" | "huggingface-dataset"},
         "size": <bytes>, "sha256": "<64 hex>", "rows": <data rows>, "rows_rule": "<how rows were counted>"}},
     "notes": {"<dataset>": {...}}}     # optional: facts found while locking (corpus-full: import order)

Entry ids: bundled files by their repository-relative path (``data/bundled/...``); hub files
``hub:<repo>@<revision>:<path>``. Entries are only ever added: an existing entry is never overwritten.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from analysis.core.atomic import write_json_atomic
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.paths import hub_dir
from bench.integrity.hashing import sha256_file

LOCK_NAME = "datasets.lock"
FORMAT = "datasets.lock/1"
ABOUT = (
    "Every dataset file the study reads. Written by `bench data lock` from files actually hashed (never "
    "edited by hand); checked by `bench data verify` and at the start of every measuring command. "
    "Format: bench/integrity/datalock.py."
)
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Source:
    repo: str
    revision: str
    path: str
    host: Literal["github", "huggingface-dataset"]


@dataclass(frozen=True)
class Entry:
    dataset: str
    base: Literal["repo", "hub"]
    path: str
    source: Source
    size: int
    sha256: str
    rows: int
    rows_rule: str

    def file(self, root: Path) -> Path:
        return (root if self.base == "repo" else hub_dir()) / self.path


def _fail(path: Path, what: str) -> BenchError:
    return BenchError(
        f"{path}: {what}. The lock is written only by `{hint('data lock')}`; restore it with git."
    )


def _entry(path: Path, key: str, raw: Any) -> Entry:
    if not isinstance(raw, dict):
        raise _fail(path, f"entry {key!r} is not an object")
    fields = {"dataset", "base", "path", "source", "size", "sha256", "rows", "rows_rule"}
    if set(raw) != fields:
        raise _fail(path, f"entry {key!r} has fields {sorted(raw)}, expected {sorted(fields)}")
    src = raw["source"]
    if not isinstance(src, dict) or set(src) != {"repo", "revision", "path", "host"}:
        raise _fail(path, f"entry {key!r}: source must have repo, revision, path, host")
    if src["host"] not in ("github", "huggingface-dataset") or raw["base"] not in ("repo", "hub"):
        raise _fail(path, f"entry {key!r}: unknown host {src['host']!r} or base {raw['base']!r}")
    if not (isinstance(raw["sha256"], str) and _HEX64.fullmatch(raw["sha256"])):
        raise _fail(path, f"entry {key!r}: sha256 must be 64 lower-case hex digits")
    for name in ("size", "rows"):
        if not isinstance(raw[name], int) or isinstance(raw[name], bool) or raw[name] < 0:
            raise _fail(path, f"entry {key!r}: {name} must be a non-negative integer")
    if not all(isinstance(raw[n], str) and raw[n] for n in ("dataset", "path", "rows_rule")):
        raise _fail(path, f"entry {key!r}: dataset, path and rows_rule must be non-empty strings")
    return Entry(
        dataset=raw["dataset"],
        base=raw["base"],
        path=raw["path"],
        source=Source(**src),
        size=raw["size"],
        sha256=raw["sha256"],
        rows=raw["rows"],
        rows_rule=raw["rows_rule"],
    )


def read_lock(path: Path) -> dict[str, Entry]:
    """The entries of a lock file, validated; BenchError naming the file and the problem otherwise."""
    if not path.exists():
        raise BenchError(f"{path}: lock file not found; write it with `{hint('data lock')}`.")
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raise _fail(
            path,
            "starts with a UTF-8 byte-order mark, which `bench data lock` never writes "
            "(the file was edited or re-saved by an editor)",
        )
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _fail(path, f"not UTF-8 ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise _fail(
            path, f"not valid JSON, corrupt or truncated (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("entries"), dict):
        raise _fail(path, f"expected an object with format {FORMAT!r} and an 'entries' object")
    return {key: _entry(path, key, raw) for key, raw in doc["entries"].items()}


def read_notes(path: Path) -> dict[str, Any]:
    """The lock's ``notes`` object (facts found while locking, e.g. the corpus's import order); {} if none."""
    if not path.exists():
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    notes = doc.get("notes", {})
    if not isinstance(notes, dict):
        raise _fail(path, "'notes' must be an object")
    return notes


def write_lock(path: Path, entries: Mapping[str, Entry], notes: Mapping[str, Any] | None = None) -> None:
    """Atomic write in the project's one JSON format (``analysis.core.atomic.write_json_atomic``). ``notes``
    replaces the lock's notes; None keeps those already in the file."""
    kept = dict(notes) if notes is not None else read_notes(path)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "about": ABOUT,
        "entries": {k: asdict(entries[k]) for k in sorted(entries)},
    }
    if kept:
        doc["notes"] = kept
    write_json_atomic(path, doc)


def set_note(path: Path, key: str, value: Any) -> None:
    """Add or replace one note (the entries are left exactly as they are)."""
    notes = read_notes(path)
    notes[key] = value
    write_lock(path, read_lock(path), notes)


def add_entries(path: Path, new: Mapping[str, Entry]) -> list[str]:
    """Add entries; refuses (writing nothing) if any id is already in the lock. Returns the added ids."""
    existing = read_lock(path) if path.exists() else {}
    clash = sorted(set(existing) & set(new))
    if clash:
        raise BenchError(
            f"{path}: refusing to overwrite existing entries: {', '.join(clash)}. Entries are never changed; "
            "if a file really changed, that is a deviation (DEVIATIONS.md) and needs a new entry id."
        )
    write_lock(path, {**existing, **new})
    return sorted(new)


def select(entries: Mapping[str, Entry], names: Iterable[str] | None, lock_path: Path) -> dict[str, Entry]:
    """Entries named by id or by dataset name; all when ``names`` is None. Unknown names are an error."""
    if names is None:
        return dict(entries)
    chosen: dict[str, Entry] = {}
    unknown: list[str] = []
    for name in names:
        hits = {k: e for k, e in entries.items() if k == name or e.dataset == name}
        if not hits:
            unknown.append(name)
        chosen.update(hits)
    if unknown:
        known = sorted({e.dataset for e in entries.values()})
        raise BenchError(
            f"{lock_path}: unknown dataset or entry name(s) {', '.join(map(repr, unknown))}; "
            f"known datasets: {', '.join(known) or '(none)'} (or an entry id listed in the lock)."
        )
    return chosen


@dataclass(frozen=True)
class Problem:
    entry_id: str
    file: Path
    what: str  # "missing", "wrong size: ...", "wrong hash: ..."

    def __str__(self) -> str:
        return f"{self.file} ({self.entry_id}): {self.what}"


def check_entry(entry_id: str, entry: Entry, root: Path, on_bytes: Any = None) -> Problem | None:
    file = entry.file(root)
    if not file.is_file():
        return Problem(entry_id, file, "missing")
    size = file.stat().st_size
    if size != entry.size:
        return Problem(entry_id, file, f"wrong size: {size} bytes, lock says {entry.size}")
    digest = sha256_file(file, on_bytes=on_bytes)
    if digest != entry.sha256:
        return Problem(entry_id, file, f"wrong hash: sha256 {digest}, lock says {entry.sha256}")
    return None
