"""The full corpus's import order (plan: "documents imported in ascending passage-id order").

``check_order`` streams the shards in numeric shard order and reports whether the passage ids ascend
(``bench.data.IMPORT_ORDER``) across all of them: the first place where they do not, how many adjacent
pairs are out of order, and duplicate ids next to each other. ``bench data lock`` records the result in
the lock's notes (``bench.integrity.datalock``), so the importer's "sort it before importing" can never
surface hours into an import.

``external_sort`` produces the import order with bounded memory: the stream is cut into runs of
``run_size`` passages, each run is sorted in memory and written to a gzip JSONL file on disk (beside the
output, in a folder that is swapped in whole), then the runs are merged with a heap
(``heapq.merge``, one passage per run in memory). Peak memory is bounded by one run (plus one passage
per run), not by the corpus. A ``manifest.json`` names the input shards' SHA-256 (the locked ones) and
the output's SHA-256 and row count; ``iter_sorted`` reads the output only when its manifest matches.
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from bench.core import paths
from bench.core.errors import BenchError
from bench.data import DocidKey, Passage, docid_key, hub
from bench.data.hub import iter_jsonl_gz
from bench.integrity import datalock

SORTED_FILE = "corpus-sorted.jsonl.gz"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "sorted-corpus/1"
DEFAULT_RUN_SIZE = 500_000  # passages per in-memory run: ~0.5 GB of Python objects for MIRACL passages
GZIP_LEVEL = 1  # of the runs and the sorted file (fast; the preflight sizes the sort's disk at this level)
SORT_DIR_NAME = "corpus-full-sorted"  # under bench.core.paths.cache_dir(), where bench first-stage sorts


@dataclass(frozen=True)
class OrderReport:
    passages: int
    ascending: bool
    out_of_order: int  # adjacent pairs whose second id is not greater than the first
    duplicates_adjacent: int
    first_violation: str | None  # "<file>:<line>: <id> after <previous id>"

    def note(self) -> str:
        if self.ascending:
            return (
                f"ascending passage ids across all shards ({self.passages:,} passages; "
                "bench.data.IMPORT_ORDER)"
            )
        return (
            f"NOT in ascending id order: {self.out_of_order:,} adjacent pairs out of order "
            f"({self.duplicates_adjacent:,} equal), first at {self.first_violation}; "
            "bench first-stage keyword-full imports an external sort (bench.data.order)"
        )

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "note": self.note()}


def _passages_with_place(shards: Sequence[Path]) -> Iterator[tuple[Passage, str]]:
    for shard in shards:
        for lineno, p in enumerate(iter_jsonl_gz(shard), 1):
            yield p, f"{shard.name}:{lineno}"


def check_order(shards: Sequence[Path]) -> OrderReport:
    """Whether the passages of ``shards`` (in this order) ascend by ``docid_key``. Blank lines are skipped,
    so the line number is that of the passage when the shard has none (MIRACL shards have none)."""
    prev: DocidKey | None = None
    prev_id = ""
    n = bad = dup = 0
    first: str | None = None
    for p, where in _passages_with_place(shards):
        key = docid_key(p.docid)
        n += 1
        if prev is not None and key <= prev:
            bad += 1
            dup += int(key == prev)
            if first is None:
                first = f"{where}: {p.docid} after {prev_id}"
        prev, prev_id = key, p.docid
    return OrderReport(n, bad == 0, bad, dup, first)


def sorted_line(p: Passage) -> bytes:
    """One passage as the runs and the sorted file hold it (the MIRACL shard format)."""
    return (
        json.dumps({"docid": p.docid, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n"
    ).encode()


def _write_run(run: list[Passage], path: Path) -> None:
    run.sort(key=lambda p: docid_key(p.docid))
    with gzip.open(path, "wb", compresslevel=GZIP_LEVEL) as fh:
        for p in run:
            fh.write(sorted_line(p))


def _read_run(path: Path) -> Iterator[tuple[DocidKey, Passage]]:
    for p in iter_jsonl_gz(path):
        yield docid_key(p.docid), p


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def external_sort(
    passages: Iterable[Passage],
    out_dir: Path,
    *,
    run_size: int = DEFAULT_RUN_SIZE,
    inputs: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Write ``passages`` in import order to ``out_dir/SORTED_FILE`` (+ ``MANIFEST``); returns the manifest.

    ``inputs`` (shard name -> SHA-256) is recorded so that a later run can tell the output still belongs to
    the locked shards. Duplicate ids raise (naming them); ``out_dir`` is built beside itself and swapped in
    whole, so an interrupted sort leaves no half output."""
    if run_size < 1:
        raise BenchError(f"run size must be at least 1, got {run_size}")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        runs = _write_runs(passages, build, run_size)
        target = build / SORTED_FILE
        n = _merge_runs(runs, target)
        for r in runs:
            r.unlink()
        manifest = {
            "format": MANIFEST_FORMAT,
            "order": "bench.data.IMPORT_ORDER",
            "passages": n,
            "runs": len(runs),
            "run_size": run_size,
            "file": SORTED_FILE,
            "sha256": sha256_of(target),
            "inputs": dict(inputs or {}),
        }
        write_json_atomic(build / MANIFEST, manifest)
        _swap_in(build, out_dir)
        return manifest
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise


def _write_runs(passages: Iterable[Passage], build: Path, run_size: int) -> list[Path]:
    """The passages in sorted runs of ``run_size`` (at least one run, empty for an empty corpus)."""
    runs: list[Path] = []
    run: list[Passage] = []
    for p in passages:
        run.append(p)
        if len(run) >= run_size:
            runs.append(build / f"run-{len(runs):05d}.jsonl.gz")
            _write_run(run, runs[-1])
            run = []
    if run or not runs:
        runs.append(build / f"run-{len(runs):05d}.jsonl.gz")
        _write_run(run, runs[-1])
    return runs


def _merge_runs(runs: Sequence[Path], target: Path) -> int:
    """Merge the sorted runs into ``target``; a duplicate id raises. Returns the number of passages."""
    n = 0
    prev: DocidKey | None = None
    prev_id = ""
    with gzip.open(target, "wb", compresslevel=GZIP_LEVEL) as fh:
        for key, p in heapq.merge(*(_read_run(r) for r in runs), key=lambda t: t[0]):
            if prev is not None and key == prev:
                raise BenchError(
                    f"passage id {p.docid!r} occurs twice in the corpus (after {prev_id!r}); the import "
                    "order is undefined. The corpus is damaged: fetch it again."
                )
            prev, prev_id = key, p.docid
            fh.write(sorted_line(p))
            n += 1
    return n


def _swap_in(build: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` by the finished ``build`` folder beside it (the old one is removed after)."""
    old = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        out_dir.rename(old)
    build.rename(out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def read_manifest(out_dir: Path) -> dict[str, Any] | None:
    path = out_dir / MANIFEST
    if not path.is_file():
        return None
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise BenchError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); delete {out_dir} to sort again"
        ) from exc
    return data


def iter_sorted(out_dir: Path, inputs: dict[str, str], expected: int | None = None) -> Iterator[Passage]:
    """The sorted corpus, only if its manifest names exactly ``inputs`` and its file hashes as recorded."""
    manifest = read_manifest(out_dir)
    if manifest is None or manifest.get("format") != MANIFEST_FORMAT:
        raise BenchError(f"{out_dir}: no sorted corpus here; it is made by bench.data.order.external_sort")
    if manifest.get("inputs") != inputs:
        raise BenchError(f"{out_dir}: sorted from other shards than the locked ones; delete it to sort again")
    if expected is not None and manifest.get("passages") != expected:
        raise BenchError(f"{out_dir}: {manifest.get('passages')} passages, expected {expected}; delete it")
    path = out_dir / SORTED_FILE
    if sha256_of(path) != manifest.get("sha256"):
        raise BenchError(f"{path}: SHA-256 differs from {out_dir / MANIFEST}; delete {out_dir} to sort again")
    yield from iter_jsonl_gz(path)


def sorted_corpus(
    passages: Iterable[Passage], out_dir: Path, inputs: dict[str, str], *, run_size: int = DEFAULT_RUN_SIZE
) -> Iterator[Passage]:
    """The import order of an out-of-order corpus: the sort made earlier if it matches, else a new one."""
    manifest = read_manifest(out_dir)
    if manifest is None or manifest.get("inputs") != inputs:
        external_sort(passages, out_dir, run_size=run_size, inputs=inputs)
    return iter_sorted(out_dir, inputs)


def full_corpus_in_import_order(
    snapshot: Path, sort_dir: Path, lock_path: Path | None = None, *, run_size: int = DEFAULT_RUN_SIZE
) -> tuple[Iterable[Passage], dict[str, Any]]:
    """The full corpus as the importer needs it: the locked shards as they are when ``bench data lock``
    found them in order, else their external sort (made once in ``sort_dir``, reused while it matches)."""
    lock_path = lock_path or paths.repo_root() / datalock.LOCK_NAME
    note = datalock.read_notes(lock_path).get("corpus-full")
    order = note.get("import_order") if isinstance(note, dict) else None
    if not isinstance(order, dict):
        return hub.iter_corpus_full(snapshot), {
            "source": "locked shards as they are",
            "lock_note": None,
            "checked": "not at lock time (the lock has no import-order note); the importer checks on the fly",
        }
    if order.get("ascending") is True:
        source = {"source": "locked shards as they are", "lock_note": order["note"]}
        return hub.iter_corpus_full(snapshot), source
    entries = datalock.read_lock(lock_path)
    inputs = {e.source.path: e.sha256 for e in entries.values() if e.dataset == "corpus-full"}
    stream = sorted_corpus(hub.iter_corpus_full(snapshot), sort_dir, inputs, run_size=run_size)
    return stream, {
        "source": f"external sort in {sort_dir}",
        "lock_note": order["note"],
        "run_size": run_size,
    }
