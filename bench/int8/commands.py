"""Library functions behind ``bench int8 calibration-set | quantize | agreement`` (plan section "OpenVINO
int8 variant"). Each verifies datasets.lock first (``bench.guard.preflight``) and records a manifest
(``bench.provenance.collect_manifest``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from analysis.atomic import write_bytes_atomic
from bench.errors import BenchError
from bench.int8 import agreement as agr
from bench.int8.calibration import read_set, write_set
from bench.int8.config import CHOSEN, QuantSpec
from bench.int8.manifest import MANIFEST, cpu_flags
from bench.paths import bundled_dir, models_dir
from bench.plan import RERANKERS

INT8_ID = "bge-v2-m3-int8"
FP32_ID = "bge-v2-m3"
HUB_LOCK = ["miracl", "corpus-71k", "corpus-full"]


def default_folder() -> Path:
    """Where ``bench int8 quantize`` writes and the ``bge-v2-m3-int8`` adapter reads (git-ignored)."""
    return models_dir() / INT8_ID


def dev_query_ids() -> set[str]:
    from bench.data.miracl import read_topics

    return set(read_topics(bundled_dir() / "miracl-de-dev" / "topics.miracl-v1.0-de-dev.tsv"))


def calibration_set(out: Path, *, root: Path) -> dict[str, Any]:
    from bench.guard import preflight
    from bench.int8.study_data import study_calibration
    from bench.provenance import collect_manifest

    pre = preflight("measurement", lock_names=HUB_LOCK, root=root)
    cal, _, _ = study_calibration(dev_query_ids())
    write_set(out, cal)
    record = {
        "calibration_sha256": cal.digest(),
        "preflight": pre,
        "provenance": collect_manifest(kind="int8-calibration-set", root=root),
    }
    write_bytes_atomic(out.with_suffix(".manifest.json"), json.dumps(record, indent=1).encode() + b"\n")
    return record


def quantize(calibration: Path, out: Path, *, root: Path, snapshot_dir: Path | None = None,
             spec: QuantSpec = CHOSEN) -> dict[str, Any]:  # fmt: skip
    from bench.guard import preflight
    from bench.int8.quantize import MAX_LENGTH_CROSS, quantize_model
    from bench.int8.study_data import study_texts
    from bench.provenance import collect_manifest
    from bench.rerankers.registry import spec_for
    from bench.rerankers.snapshots import resolve_snapshot

    cal = read_set(calibration, dev_queries=dev_query_ids())
    source = resolve_snapshot(spec_for(FP32_ID), snapshot_dir)  # refuses another revision
    pre = preflight("measurement", lock_names=["miracl", "corpus-full"], root=root)
    pairs = study_texts(cal)
    plan = RERANKERS[FP32_ID]
    return quantize_model(
        source,
        out,
        task="text-classification",
        pairs=pairs,
        spec=spec,
        max_length=MAX_LENGTH_CROSS,
        record={
            "source_model": plan.model,
            "source_revision": plan.revision,
            "calibration_file": calibration.name,
            "calibration_sha256": cal.digest(),
            "preflight": pre,
            "provenance": collect_manifest(kind="int8-quantize", device="cpu", dtype="int8", root=root),
        },
    )


def machine_scores(folder: Path, *, stream: TextIO | None = None) -> dict[str, Any]:
    """This machine's int8 scores on the 20 equality queries, as a scores record."""
    from bench.equality.runner import load_equality_set
    from bench.int8.adapter import Int8CrossEncoder
    from bench.integrity.hashing import sha256_file
    from bench.progress import Progress

    data = load_equality_set()
    model = Int8CrossEncoder(folder)
    scores: dict[str, tuple[list[str], list[float]]] = {}
    queries = data.queries[: agr.QUERIES]
    with Progress("int8 agreement", len(queries), "queries", stream=stream or sys.stderr) as progress:
        for q in queries:
            res = model.score(q.query, list(q.passages))
            scores[q.qid] = (list(q.docids), [float(x) for x in res.scores])
            progress.advance()
    return agr.scores_record(
        scores,
        model=INT8_ID,
        machine=cpu_flags(),
        manifest_sha256=sha256_file(folder / MANIFEST),
        inputs={"equality_set": data.provenance.get("files_sha256")},
    )


def agreement(folder: Path, *, against: Path | None, write: Path | None, root: Path,
              stream: TextIO | None = None) -> dict[str, Any]:  # fmt: skip
    """Score here, optionally write the scores file, optionally compare with ``against``; BenchError if any
    query fails (exit 1, naming the queries)."""
    from bench.guard import preflight

    if against is None and write is None:
        raise BenchError("give --against FILE (compare) and/or --write FILE (record this machine's scores)")
    theirs = agr.read_scores(against) if against is not None else None  # refuse a bad file before scoring
    preflight("measurement", lock_names=["reranking", "reranking-id-map"], root=root)
    record = machine_scores(folder, stream=stream)
    if write is not None:
        agr.write_scores(write, record)
    if theirs is None:
        return {"written": str(write)}
    mine = {q: (r["docids"], r["scores"]) for q, r in record["queries"].items()}
    result = agr.summary(agr.compare(mine, theirs))
    if result["failed"]:
        raise BenchError(
            f"int8 agreement with {against}: {len(result['failed'])} of {result['queries']} queries below "
            f"Spearman {agr.MIN_SPEARMAN} or not comparable: "
            + ", ".join(f"{q} ({result['per_query'][q]['reason']})" for q in result["failed"])
        )
    return result
