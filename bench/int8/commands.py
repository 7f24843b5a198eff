"""Library functions behind ``bench int8 calibration-set | quantize | agreement`` (plan section "OpenVINO
int8 variant"). Each verifies datasets.lock first (``bench.guard.preflight``) and records a manifest
(``bench.provenance.collect_manifest``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from analysis.atomic import write_bytes_atomic
from analysis.plan import INT8_FP32_MODEL, INT8_QUALITY_STAGE
from bench.errors import BenchError
from bench.int8 import agreement as agr
from bench.int8.calibration import read_set, write_set
from bench.int8.config import CHOSEN, QuantSpec
from bench.int8.manifest import MANIFEST, cpu_flags
from bench.paths import bundled_dir, models_dir
from bench.plan import RERANKERS

FP32_ID = INT8_FP32_MODEL  # plan: "bge-v2-m3 with OpenVINO int8"
INT8_ID = f"{FP32_ID}-int8"
HUB_LOCK = ["miracl", "corpus-71k", "corpus-full"]
INT8_STAGE = INT8_QUALITY_STAGE  # plan: quality measured on hybrid-71k, k = 100


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


def quality(root: Path, *, study_dir: Path, runs_dir: Path, first_stage_dir: Path, checks_dir: Path) -> Any:
    """The int8 model through the quality phase (journal, timing, run files) on hybrid-71k, its own run
    ``runs/hybrid-71k/bge-v2-m3-int8@<k>.trec`` (depth 100; 20 and 50 derived as for every pointwise model).

    The int8 variant is compared with the fp32 model (``analysis.int8``), so it runs only if bge-v2-m3 is
    rated by the adapter checks; the plan's check of the variant is its agreement and quality against fp32.
    """
    from bench.plan import DEPTHS
    from bench.quality.commands import Setup, lock_names, open_measurement, rated
    from bench.quality.driver import execute
    from bench.quality.inputs import candidate_texts, study_queries
    from bench.quality.phase import PhaseSpec
    from bench.rerankers.registry import load_reranker

    keep, skipped, outcomes = rated([FP32_ID], checks_dir)
    if not keep:
        raise BenchError(f"{FP32_ID} is not rated ({skipped[FP32_ID]}); its int8 variant is compared with it "
                         "and is not run either")  # fmt: skip
    stage = INT8_STAGE
    setup = Setup(root, study_dir, runs_dir, first_stage_dir, checks_dir, device="cpu", kind="int8-quality")
    params = {"stages": [stage], "models": [INT8_ID], "depths": list(DEPTHS), "device": "cpu",
              "dtype": "int8", "per_depth": [], "max_queries": None,
              "fp32_adapter_check": outcomes[FP32_ID]}  # fmt: skip
    study = open_measurement(setup, params, lock_names=lock_names([stage]))
    queries, _ = study_queries()
    from bench.hints import bench_command

    hint = bench_command("int8", "quality", "--study", study_dir, root=root)
    return execute(
        study, sources={stage: first_stage_dir / f"{stage}.trec"}, queries=queries, texts=candidate_texts,
        load=lambda m: load_reranker(m, device="cpu"), spec=PhaseSpec(stages=(stage,), models=(INT8_ID,),
        depths=tuple(DEPTHS)), runs_dir=runs_dir, resume_hint=hint, what="int8 quality run",
    )  # fmt: skip
