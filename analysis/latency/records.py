"""The on-disk format of latency results (plan section "Latency") and its reader.

Layout (one JSON file per finished block; a block is one (machine, model or stage, k, pass))::

    results/latency/
      published/                      numbers the report may publish
        <kind>/<session>/<target>/k<k>-pass<p>.json
      not-published/                  the desktop CPU pre-measurement, rehearsals, anything marked so
        <kind>/<session>/<target>/k<k>-pass<p>.json

- ``<kind>``: ``gpu``, ``cpu``, ``api`` or ``first-stage`` (the report's "machine" grouping).
- ``<session>``: the machine label of a local run (``rtx-5070-ti``, ``ccx33-fsn1``, ``desktop-8t``), or for
  the API one session per time of day (``2026-12-01T0815Z-morning``): the plan's three sessions are three
  folders.
- ``<target>``: a reranker id (``bge-v2-m3``, ``bge-v2-m3-int8``, ``minilm-standin``) or a first-stage id.
- Names are ``[A-Za-z0-9._-]+``. A file is written atomically after its block finished; an unfinished block
  leaves no file (``bench`` discards it and measures it again from its warm-up). Files starting with ``.``
  are temporary and ignored.

A block file is one JSON object (``FORMAT`` = ``"latency-block/1"``), keys sorted, full precision:

- ``format``, ``kind``, ``machine`` (what ran it, in words), ``session``, ``target``, ``target_type``
  (``reranker`` | ``first-stage``), ``k``, ``pass`` (1-based), ``published`` (must match the folder),
  ``marks`` (reasons a reader must see next to the numbers: an accuracy mismatch, a busy host let through
  by ``--allow-busy``, ``--allow-unrated``; empty when clean; a block run with ``--allow-unrated`` is never
  published and always lies under ``not-published/``), ``allow_busy``, ``allow_unrated``, ``started_utc``,
  ``finished_utc``;
- ``query_seed`` (int or null: plan order), ``query_ids`` (the measured order, exactly as run),
  ``warmup_query_ids`` (the warm-up calls, discarded, in order), ``chunk_size`` (pairs per forward pass,
  fixed for the block; null: API or first stage), ``timer`` (what the clock covers, in words);
- ``host_before``, ``host_after``: load average, CPU frequency, free memory, torch/OpenMP threads, CPU
  affinity, GPU clocks/temperature/power, the CPU counters (``cpu_counters``) and the CPU other processes
  used (``foreign``, which the busy-host rule judges: in ``host_after`` over the block itself; null in
  ``host_before`` of blocks measured after 2026-12-01, older ones: the second before) (keys documented in
  ``bench.latency.host``; null where unreadable);
- ``accuracy``: ``status`` (``passed`` | ``mismatch`` | ``not-checked``), ``reference`` (the quality run
  compared with, or null), ``threshold``, ``queries`` (compared), ``min_spearman``, ``failed_queries``,
  ``reason``;
- ``telemetry``: null, or ``{"source", "interval_s", "fields", "samples": [{"t_s", ...fields}]}`` sampled
  beside the block (warm-up included);
- ``api``: null, or the session facts of a Voyage run (``endpoint``, ``time_of_day``, ``session_utc``,
  ``training_opt_out`` (``yes`` | ``no``), ``connect_ns`` (TCP connect baseline samples));
- ``reranker``: the adapter's meta (null for a first stage); ``manifest``: ``bench.records.provenance``
manifest;
  ``candidates`` (optional, added after the first version): ``{"stage", "run_file", "sha256"}`` of the
  first-stage run the k candidates were taken from (top k in first-stage order);
- ``samples``: one object per measured call, in measured order: ``query_id``, ``k``, ``pass``, ``ns``
  (wall clock of the call, ``time.perf_counter_ns``; null only for an API query that failed for good, with
  ``error``), ``cuda_ns`` (CUDA-event time on GPU runs, else null), ``chunk_size``, ``n_passages``,
  ``input_tokens`` (sum over the call's model inputs; null when the adapter does not report it),
  ``max_input_tokens``; API: ``attempts`` (every attempt: ``attempt``, ``status``, ``ns``, ``error``,
  ``retry_after_s``, ``waited_s``), ``retried``, ``billed_tokens``; first stage: ``server_ms`` (Typesense's
  ``search_time_ms``); ``error`` (null unless the call failed);
- ``summary``: ``block_summary`` of the samples as written; the reader recomputes it and refuses a file whose
  stored summary differs (every summary is recomputable from the raw samples).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from analysis.core.atomic import json_bytes
from analysis.latency.summary import block_summary

FORMAT = "latency-block/1"
KINDS = ("gpu", "cpu", "api", "first-stage")
PUBLICATIONS = {"published": True, "not-published": False}
TARGET_TYPES = ("reranker", "first-stage")
ACCURACY_STATUSES = ("passed", "mismatch", "not-checked")
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
_FILE = re.compile(r"^k(\d+)-pass(\d+)\.json$")


class LatencyFormatError(ValueError):
    """A latency block file that does not follow the format; names the file, what is wrong and the fix."""

    def __init__(self, path: Path | str, problem: str, fix: str = "rewrite it with `bench latency`") -> None:
        self.path = str(path)
        super().__init__(f"{path}: {problem}. Fix: {fix}")


def check_name(value: str, what: str) -> str:
    if not _NAME.match(value) or value in (".", ".."):
        raise ValueError(f"{what} {value!r} must match [A-Za-z0-9._-]+ (it is a folder name)")
    return value


def block_relpath(*, published: bool, kind: str, session: str, target: str, k: int, pass_: int) -> Path:
    """Where a block lives below ``results/latency``."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    folder = "published" if published else "not-published"
    name = f"k{int(k)}-pass{int(pass_)}.json"
    return Path(folder, kind, check_name(session, "session"), check_name(target, "target"), name)


class _Keyed(Protocol):
    """What names a block's file (:func:`block_relpath`)."""

    @property
    def published(self) -> bool: ...
    @property
    def kind(self) -> str: ...
    @property
    def session(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def k(self) -> int: ...
    @property
    def pass_(self) -> int: ...


class BlockPath:
    """``relpath()`` once, for the block read back (:class:`Block`) and the block to measure
    (``bench.latency.harness.BlockSpec``)."""

    def relpath(self: _Keyed) -> Path:
        return block_relpath(
            published=self.published,
            kind=self.kind,
            session=self.session,
            target=self.target,
            k=self.k,
            pass_=self.pass_,
        )


@dataclass(frozen=True)
class Attempt:
    attempt: int
    status: int | None
    ns: int | None
    error: str | None = None
    retry_after_s: float | None = None
    waited_s: float = 0.0


@dataclass(frozen=True)
class Sample:
    """One measured call. ``ns`` is None only for an API query that failed for good (``error`` says why)."""

    query_id: str
    k: int
    pass_: int
    ns: int | None
    cuda_ns: int | None = None
    chunk_size: int | None = None
    n_passages: int = 0
    input_tokens: int | None = None
    max_input_tokens: int | None = None
    attempts: tuple[Attempt, ...] | None = None
    retried: bool | None = None
    billed_tokens: int | None = None
    server_ms: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class Accuracy:
    status: str
    reference: str | None
    threshold: float | None
    queries: int
    min_spearman: float | None
    failed_queries: tuple[str, ...] = ()
    reason: str | None = None


@dataclass(frozen=True)
class Block(BlockPath):
    kind: str
    machine: str
    session: str
    target: str
    target_type: str
    k: int
    pass_: int
    published: bool
    marks: tuple[str, ...]
    allow_busy: bool
    allow_unrated: bool
    started_utc: str
    finished_utc: str
    query_seed: int | None
    query_ids: tuple[str, ...]
    warmup_query_ids: tuple[str, ...]
    chunk_size: int | None
    timer: str
    host_before: Mapping[str, Any]
    host_after: Mapping[str, Any]
    accuracy: Accuracy
    samples: tuple[Sample, ...]
    telemetry: Mapping[str, Any] | None = None
    api: Mapping[str, Any] | None = None
    reranker: Mapping[str, Any] | None = None
    manifest: Mapping[str, Any] = field(default_factory=dict)
    candidates: Mapping[str, Any] | None = None  # where the k candidates came from (stage, run file, sha256)
    path: str | None = None  # where it was read from (not written)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the file, ``summary`` included (computed here, from the samples)."""
        out: dict[str, Any] = {
            "format": FORMAT,
            "kind": self.kind,
            "machine": self.machine,
            "session": self.session,
            "target": self.target,
            "target_type": self.target_type,
            "k": self.k,
            "pass": self.pass_,
            "published": self.published,
            "marks": list(self.marks),
            "allow_busy": self.allow_busy,
            "allow_unrated": self.allow_unrated,
            "started_utc": self.started_utc,
            "finished_utc": self.finished_utc,
            "query_seed": self.query_seed,
            "query_ids": list(self.query_ids),
            "warmup_query_ids": list(self.warmup_query_ids),
            "chunk_size": self.chunk_size,
            "timer": self.timer,
            "host_before": dict(self.host_before),
            "host_after": dict(self.host_after),
            "accuracy": {**self.accuracy.__dict__, "failed_queries": list(self.accuracy.failed_queries)},
            "telemetry": None if self.telemetry is None else dict(self.telemetry),
            "api": None if self.api is None else dict(self.api),
            "reranker": None if self.reranker is None else dict(self.reranker),
            "manifest": dict(self.manifest),
            "candidates": None if self.candidates is None else dict(self.candidates),
            "samples": [_sample_dict(s) for s in self.samples],
        }
        out["summary"] = block_summary(self).to_dict()
        return out

    def to_json_bytes(self) -> bytes:
        return json_bytes(self.to_dict())


def _sample_dict(s: Sample) -> dict[str, Any]:
    out = {k: v for k, v in s.__dict__.items() if k not in ("pass_", "attempts")}
    out["pass"] = s.pass_
    out["attempts"] = None if s.attempts is None else [a.__dict__.copy() for a in s.attempts]
    return out


def _get(
    obj: Mapping[str, Any],
    key: str,
    types: type | tuple[type, ...],
    path: Path | str,
    *,
    nullable: bool = False,
) -> Any:
    if key not in obj:
        raise LatencyFormatError(path, f"key {key!r} is missing")
    value = obj[key]
    if value is None and nullable:
        return None
    bad_bool = isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,))
    if not isinstance(value, types) or bad_bool:
        raise LatencyFormatError(path, f"key {key!r} has {type(value).__name__} {value!r}, expected {types}")
    return value


def _opt_int(obj: Mapping[str, Any], key: str, path: Path | str) -> int | None:
    return _get(obj, key, int, path, nullable=True)  # type: ignore[no-any-return]


def _parse_sample(raw: Any, path: Path | str, index: int) -> Sample:
    where = f"{path} (samples[{index}])"
    if not isinstance(raw, dict):
        raise LatencyFormatError(where, "a sample is not an object")
    attempts_raw = _get(raw, "attempts", list, where, nullable=True)
    attempts = None
    if attempts_raw is not None:
        attempts = tuple(
            Attempt(
                attempt=_get(a, "attempt", int, where),
                status=_opt_int(a, "status", where),
                ns=_opt_int(a, "ns", where),
                error=_get(a, "error", str, where, nullable=True),
                retry_after_s=_get(a, "retry_after_s", (int, float), where, nullable=True),
                waited_s=float(_get(a, "waited_s", (int, float), where)),
            )
            for a in attempts_raw
        )
    sample = Sample(
        query_id=_get(raw, "query_id", str, where),
        k=_get(raw, "k", int, where),
        pass_=_get(raw, "pass", int, where),
        ns=_opt_int(raw, "ns", where),
        cuda_ns=_opt_int(raw, "cuda_ns", where),
        chunk_size=_opt_int(raw, "chunk_size", where),
        n_passages=_get(raw, "n_passages", int, where),
        input_tokens=_opt_int(raw, "input_tokens", where),
        max_input_tokens=_opt_int(raw, "max_input_tokens", where),
        attempts=attempts,
        retried=_get(raw, "retried", bool, where, nullable=True),
        billed_tokens=_opt_int(raw, "billed_tokens", where),
        server_ms=_get(raw, "server_ms", (int, float), where, nullable=True),
        error=_get(raw, "error", str, where, nullable=True),
    )
    if sample.ns is None and sample.error is None:
        raise LatencyFormatError(where, "a sample without a time must say why (`error`)")
    if sample.ns is not None and sample.ns < 0:
        raise LatencyFormatError(where, f"negative time {sample.ns}")
    return sample


def parse_block(obj: Any, path: Path | str = "<memory>") -> Block:
    """A ``Block`` from the JSON object of a block file; ``LatencyFormatError`` on any deviation."""
    if not isinstance(obj, dict):
        raise LatencyFormatError(path, "not a JSON object")
    if obj.get("format") != FORMAT:
        raise LatencyFormatError(path, f"format {obj.get('format')!r} is not {FORMAT!r}")
    acc = _get(obj, "accuracy", dict, path)
    accuracy = Accuracy(
        status=_get(acc, "status", str, path),
        reference=_get(acc, "reference", str, path, nullable=True),
        threshold=_get(acc, "threshold", (int, float), path, nullable=True),
        queries=_get(acc, "queries", int, path),
        min_spearman=_get(acc, "min_spearman", (int, float), path, nullable=True),
        failed_queries=tuple(_get(acc, "failed_queries", list, path)),
        reason=_get(acc, "reason", str, path, nullable=True),
    )
    if accuracy.status not in ACCURACY_STATUSES:
        raise LatencyFormatError(path, f"accuracy status {accuracy.status!r} not in {ACCURACY_STATUSES}")
    samples = tuple(_parse_sample(s, path, i) for i, s in enumerate(_get(obj, "samples", list, path)))
    block = Block(
        kind=_get(obj, "kind", str, path),
        machine=_get(obj, "machine", str, path),
        session=_get(obj, "session", str, path),
        target=_get(obj, "target", str, path),
        target_type=_get(obj, "target_type", str, path),
        k=_get(obj, "k", int, path),
        pass_=_get(obj, "pass", int, path),
        published=_get(obj, "published", bool, path),
        marks=tuple(_get(obj, "marks", list, path)),
        allow_busy=_get(obj, "allow_busy", bool, path),
        allow_unrated=_get(obj, "allow_unrated", bool, path),
        started_utc=_get(obj, "started_utc", str, path),
        finished_utc=_get(obj, "finished_utc", str, path),
        query_seed=_opt_int(obj, "query_seed", path),
        query_ids=tuple(_get(obj, "query_ids", list, path)),
        warmup_query_ids=tuple(_get(obj, "warmup_query_ids", list, path)),
        chunk_size=_opt_int(obj, "chunk_size", path),
        timer=_get(obj, "timer", str, path),
        host_before=_get(obj, "host_before", dict, path),
        host_after=_get(obj, "host_after", dict, path),
        accuracy=accuracy,
        samples=samples,
        telemetry=_get(obj, "telemetry", dict, path, nullable=True),
        api=_get(obj, "api", dict, path, nullable=True),
        reranker=_get(obj, "reranker", dict, path, nullable=True),
        manifest=_get(obj, "manifest", dict, path),
        candidates=_get({"candidates": obj.get("candidates")}, "candidates", dict, path, nullable=True),
        path=str(path),
    )
    _check_consistent(block, obj.get("summary"), path)
    return block


def _check_consistent(block: Block, stored_summary: Any, path: Path | str) -> None:
    if block.kind not in KINDS:
        raise LatencyFormatError(path, f"kind {block.kind!r} is not one of {', '.join(KINDS)}")
    if block.target_type not in TARGET_TYPES:
        raise LatencyFormatError(path, f"target_type {block.target_type!r} not in {TARGET_TYPES}")
    if [s.query_id for s in block.samples] != list(block.query_ids):
        raise LatencyFormatError(path, "the samples' query ids differ from `query_ids` (order included)")
    wrong = [s.query_id for s in block.samples if s.k != block.k or s.pass_ != block.pass_]
    if wrong:
        raise LatencyFormatError(path, f"samples of another k or pass in the block (first: {wrong[0]})")
    if stored_summary != block_summary(block).to_dict():
        raise LatencyFormatError(
            path,
            "the stored `summary` differs from the one recomputed from `samples`",
            "the raw samples are authoritative; rewrite the summary from them",
        )


def read_block(path: Path | str) -> Block:
    """One block file (UTF-8, a byte-order mark tolerated); its folder must agree with its content.

    A file read again with the same bytes gives the block parsed the first time (blocks are frozen): the
    runbook's report reads every block twice, for the costs section and the latency section (the guard's
    inputs: 22,655 samples, 0.25 s CPU a read). A refused file is parsed, and refused, each time."""
    path = Path(path)
    return _block_of(path, path.read_bytes())


@lru_cache(maxsize=512)  # more than a study's blocks; a block file is about 100 KB
def _block_of(path: Path, data: bytes) -> Block:
    try:
        obj = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LatencyFormatError(path, f"not UTF-8 JSON ({exc})") from None
    block = parse_block(obj, path)
    expected = block.relpath()
    if tuple(path.parts[-len(expected.parts) :]) != expected.parts:
        raise LatencyFormatError(
            path,
            f"its content belongs at .../{expected.as_posix()}",
            "move it there; published and not-published never mix",
        )
    return block


def block_files(folder: Path | str) -> list[Path]:
    """Every block file below ``folder`` (``results/latency`` or one of its sub-folders), sorted."""
    root = Path(folder)
    found = [p for p in root.rglob("*.json") if _FILE.match(p.name) and not p.name.startswith(".")]
    return sorted(found, key=lambda p: p.as_posix())


def read_blocks(folder: Path | str, *, published: bool | None = None) -> tuple[Block, ...]:
    """Every block below ``folder`` as typed records, sorted by (kind, session, target, k, pass).

    ``published=True`` keeps only published blocks, ``False`` only not-published ones, ``None`` both (the
    caller must then keep them apart: published and not-published numbers never share a table)."""
    blocks = [read_block(p) for p in block_files(folder)]
    if published is not None:
        blocks = [b for b in blocks if b.published is published]
    return tuple(sorted(blocks, key=lambda b: (b.kind, b.session, b.target, b.k, b.pass_)))


def samples_of(blocks: Sequence[Block]) -> list[Sample]:
    return [s for b in blocks for s in b.samples]
