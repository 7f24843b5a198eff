"""Library functions behind ``bench int8 calibration-set | quantize | agreement`` (plan section "OpenVINO
int8 variant"). Each verifies datasets.lock first (``bench.records.guard.preflight``) and records a manifest
(``bench.records.provenance.collect_manifest``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from analysis.core.atomic import write_json_atomic
from analysis.core.plan import INT8_FP32_MODEL, INT8_MODEL, INT8_QUALITY_STAGE
from bench.core.errors import BenchError
from bench.core.hints import bench_command
from bench.core.paths import bundled_dir
from bench.core.plan import DEPTHS, RERANKERS
from bench.core.progress import Progress
from bench.data.miracl import read_topics
from bench.equality import runner
from bench.equality.results import quality_setting
from bench.equality.runner import id_map_lock_names, resolve_id_map_method
from bench.int8 import agreement as agr
from bench.int8.calibration import read_set, write_set
from bench.int8.quantize import MAX_LENGTH_CROSS, quantize_model
from bench.int8.study_data import study_calibration, study_texts
from bench.integrity import hashing
from bench.quality import inputs
from bench.quality.driver import execute
from bench.quality.library import Setup, lock_names, open_measurement, rated
from bench.quality.phase import PhaseSpec
from bench.records import guard, provenance
from bench.rerankers.openvino.adapter import Int8CrossEncoder
from bench.rerankers.openvino.config import CHOSEN, INFERENCE_PRECISION, QuantSpec
from bench.rerankers.openvino.manifest import MANIFEST, cpu_flags, read_manifest, verify_folder
from bench.rerankers.registry import load_reranker, spec_for
from bench.rerankers.snapshots import resolve_snapshot

FP32_ID = INT8_FP32_MODEL  # plan: "bge-v2-m3 with OpenVINO int8"
INT8_ID = INT8_MODEL
HUB_LOCK = ["miracl", "corpus-71k", "corpus-full"]
INT8_STAGE = INT8_QUALITY_STAGE  # plan: quality measured on hybrid-71k, k = 100


def dev_query_ids() -> set[str]:
    return set(read_topics(bundled_dir() / "miracl-de-dev" / "topics.miracl-v1.0-de-dev.tsv"))


def calibration_set(out: Path, *, root: Path) -> dict[str, Any]:
    pre = guard.preflight("measurement", lock_names=HUB_LOCK, root=root)
    cal, _, _ = study_calibration(dev_query_ids())
    write_set(out, cal)
    record = {
        "calibration_sha256": cal.digest(),
        "preflight": pre,
        "provenance": provenance.collect_manifest(kind="int8-calibration-set", root=root),
    }
    write_json_atomic(out.with_suffix(".manifest.json"), record)
    return record


def quantize(
    calibration: Path, out: Path, *, root: Path, snapshot_dir: Path | None = None, spec: QuantSpec = CHOSEN
) -> dict[str, Any]:
    cal = read_set(calibration, dev_queries=dev_query_ids())
    source = resolve_snapshot(spec_for(FP32_ID), snapshot_dir)  # refuses another revision
    pre = guard.preflight("measurement", lock_names=["miracl", "corpus-full"], root=root)
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
            "provenance": provenance.collect_manifest(
                kind="int8-quantize", device="cpu", dtype="int8", root=root
            ),
        },
    )


def machine_scores(
    folder: Path, *, id_map_method: str = "de.gz", stream: TextIO | None = None
) -> dict[str, Any]:
    """This machine's int8 scores on the 20 equality queries, as a scores record."""
    data = runner.load_equality_set(id_map_method=id_map_method)
    model = Int8CrossEncoder(folder)
    runtime = model.meta.extra["openvino_runtime"]
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
        manifest_sha256=hashing.sha256_file(folder / MANIFEST),
        inputs={"equality_set": data.provenance.get("files_sha256"), "id_map_method": id_map_method},
        config=agr.configuration(read_manifest(folder), runtime),
        runtime=runtime,
    )


def agreement(
    folder: Path,
    *,
    against: Path | None,
    write: Path | None,
    root: Path,
    id_map: str = "auto",
    verdict: Path | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Score here, optionally write the scores file, optionally compare with ``against``; BenchError if any
    query fails (exit 1, naming the queries).

    ``id_map``: how MIRACLReranking ids become MIRACL ids, shared with ``bench check-adapters`` (auto: de.gz
    if fetched, else one pass over the full corpus, D-019). Before scoring, ``against`` must have been made
    with this folder's configuration and precision. A comparison's verdict (pass or fail, both machines' CPU
    flags) is written to ``verdict`` (default ``results/int8/agreement.json``) before a failure is raised.
    """
    if against is None and write is None:
        raise BenchError("give --against FILE (compare) and/or --write FILE (record this machine's scores)")
    # a bad or differently made file is refused before anything is scored
    theirs_rec, theirs = agr.read_scores_file(against) if against is not None else ({}, None)
    if against is not None:
        local = agr.configuration(verify_folder(folder), {"inference_precision": INFERENCE_PRECISION})
        agr.require_same_configuration(
            local, f"{folder} (this machine)", theirs_rec.get("configuration"), str(against)
        )
    method = resolve_id_map_method(id_map)
    guard.preflight("measurement", lock_names=id_map_lock_names(method), root=root)
    record = machine_scores(folder, id_map_method=method, stream=stream)
    if write is not None:
        agr.write_scores(write, record)
    if theirs is None or against is None:
        return {"written": str(write)}
    agr.require_same_configuration(
        record["configuration"], "this machine", theirs_rec.get("configuration"), str(against)
    )
    mine = {q: (r["docids"], r["scores"]) for q, r in record["queries"].items()}
    result = agr.summary(agr.compare(mine, theirs))
    result["machines"] = {"this": record["machine"], "against": theirs_rec.get("machine")}
    result["cpu_flags"] = {
        "this": agr.flags_line(record["machine"]),
        "against": agr.flags_line(theirs_rec.get("machine")),
    }
    out = verdict if verdict is not None else root / agr.VERDICT
    _write_verdict(out, result, record, against, root)
    result["verdict_file"] = str(out)
    if result["failed"]:
        raise BenchError(
            f"int8 agreement with {against}: {len(result['failed'])} of {result['queries']} queries below "
            f"Spearman {agr.MIN_SPEARMAN} or not comparable: "
            + ", ".join(f"{q} ({result['per_query'][q]['reason']})" for q in result["failed"])
            + f". CPU here: {result['cpu_flags']['this']}; CPU of {against}: {result['cpu_flags']['against']}"
            + f". Verdict written to {out}"
        )
    return result


def _write_verdict(
    out: Path, result: dict[str, Any], record: dict[str, Any], against: Path, root: Path
) -> None:
    body = {
        "format": agr.VERDICT_FORMAT,
        "model": INT8_ID,
        **result,
        "queries_passed": result["passed"],
        "passed": not result["failed"],  # the verdict (``result["passed"]`` counts queries)
        "against": {"file": against.name, "sha256": hashing.sha256_file(against)},
        "int8_manifest_sha256": record["int8_manifest_sha256"],
        "configuration": record["configuration"],
        "openvino_runtime": record["openvino_runtime"],
        "inputs": record["inputs"],
        "provenance": provenance.collect_manifest(
            kind="int8-agreement", device="cpu", dtype="int8", root=root
        ),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, body, default=str)


def fp32_reference_setting(root: Path) -> tuple[str, str | None]:
    """(device, requested dtype) of the quality session that wrote the run the int8 variant is compared with
    (``runs/hybrid-71k/bge-v2-m3@100.trec``): ``bench.equality.results.quality_setting`` (found by
    tests/runbook, where the quality phase ran on the CPU and its check is ``<model>@cpu-float32.json``)."""
    return quality_setting(root)


def quality(root: Path, *, study_dir: Path, runs_dir: Path, first_stage_dir: Path, checks_dir: Path) -> Any:
    """The int8 model through the quality phase (journal, timing, run files) on hybrid-71k, its own run
    ``runs/hybrid-71k/bge-v2-m3-int8@<k>.trec`` (depth 100; 20 and 50 derived as for every pointwise model).

    The int8 variant is compared with the fp32 model (``analysis.int8``), so it runs only if bge-v2-m3 is
    rated by the adapter checks; the plan's check of the variant is its agreement and quality against fp32.
    """
    device, dtype = fp32_reference_setting(root)
    keep, skipped, outcomes = rated([FP32_ID], checks_dir, device=device, dtype=dtype)
    if not keep:
        raise BenchError(
            f"{FP32_ID} is not rated ({skipped[FP32_ID]}); its int8 variant is compared with it "
            "and is not run either"
        )
    stage = INT8_STAGE
    setup = Setup(root, study_dir, runs_dir, first_stage_dir, checks_dir, device="cpu", kind="int8-quality")
    params = {
        "stages": [stage],
        "models": [INT8_ID],
        "depths": list(DEPTHS),
        "device": "cpu",
        "dtype": "int8",
        "per_depth": [],
        "max_queries": None,
        "fp32_adapter_check": outcomes[FP32_ID],
    }
    study = open_measurement(setup, params, lock_names=lock_names([stage]))
    queries, _ = inputs.study_queries()

    hint = bench_command("int8", "quality", "--study", study_dir, root=root)
    return execute(
        study,
        sources={stage: first_stage_dir / f"{stage}.trec"},
        queries=queries,
        texts=inputs.candidate_texts,
        load=lambda m: load_reranker(m, device="cpu"),
        spec=PhaseSpec(stages=(stage,), models=(INT8_ID,), depths=tuple(DEPTHS)),
        runs_dir=runs_dir,
        resume_hint=hint,
        what="int8 quality run",
    )
