"""``bench check-adapters`` as a library function: load the check data once, run check 1 (local models) or
check 3 (Voyage) per model, write one result file each (plan: Adapter checks).

Every failure that keeps a model from being checked (snapshot missing, adapter fails to load, reference
cannot run, API unreachable) becomes a "not rated" result with the reason; nothing is skipped silently.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bench.records.provenance as provenance_mod
from bench.core import plan
from bench.core.errors import BenchError
from bench.core.memory import is_sticky_device_error
from bench.core.paths import bundled_dir, repo_root
from bench.core.progress import Progress
from bench.data import hub
from bench.data.id_map import read_id_map
from bench.data.miracl import read_topics
from bench.equality.check import ReferenceRunner, adapter_scores, evaluate
from bench.equality.data import (
    ID_MAP_METHODS,
    EqualitySet,
    build_equality_set,
    build_equality_set_from_corpus,
    load_reranking,
)
from bench.equality.pointwise import run_pointwise
from bench.equality.references import (
    DECIDING,
    FURTHER,
    ReferenceSpec,
    ReferenceUnavailable,
    run_reference,
    run_reference_batch,
)
from bench.equality.results import SCORING_DEVICE, results_dir, scoring_setting, write_result
from bench.integrity.hashing import sha256_file
from bench.integrity.hub import snapshot_dir
from bench.rerankers.protocol import Reranker
from bench.rerankers.registry import load_reranker, spec_for
from bench.rerankers.snapshots import resolve_snapshot

Loader = Callable[..., Reranker]
TORCH_DTYPES = ("float32", "float16", "bfloat16")


def resolve_id_map_method(method: str, id_map_file: Path | None = None) -> str:
    """``auto`` -> ``de.gz`` if that file is there, else ``corpus`` (the fallback that needs no de.gz)."""
    if method not in ("auto", *ID_MAP_METHODS):
        raise BenchError(f"unknown id map method {method!r}; choose auto, {', '.join(ID_MAP_METHODS)}")
    if method != "auto":
        return method
    path = id_map_file or snapshot_dir(plan.RERANKING_ID_MAP) / plan.RERANKING_ID_MAP_PATH
    return "de.gz" if path.is_file() else "corpus"


def id_map_lock_names(method: str) -> list[str]:
    """The locked datasets an id map method reads (for ``preflight``)."""
    return ["reranking", "reranking-id-map" if method == "de.gz" else "corpus-full"]


def load_equality_set(
    reranking_snapshot: Path | None = None,
    id_map_file: Path | None = None,
    topics_file: Path | None = None,
    *,
    id_map_method: str = "de.gz",
    corpus_snapshot: Path | None = None,
) -> EqualitySet:
    """The first 20 MIRACLReranking queries with MIRACL ids, plus the SHA-256 of every file read.

    ``id_map_method`` ``de.gz`` maps ids through ``data/bm25/de.gz``; ``corpus`` through one streamed pass
    over the full corpus snapshot (whose shards ``preflight`` has verified against datasets.lock)."""
    snap = reranking_snapshot or snapshot_dir(plan.RERANKING)
    id_map_path = id_map_file or snapshot_dir(plan.RERANKING_ID_MAP) / plan.RERANKING_ID_MAP_PATH
    topics_path = topics_file or bundled_dir() / "miracl-de-dev" / "topics.miracl-v1.0-de-dev.tsv"
    rows = load_reranking(snap)
    topics = read_topics(topics_path) if topics_path.is_file() else {}
    files = {
        f"{plan.RERANKING.repo}@{plan.RERANKING.revision}:{p}": sha256_file(snap / p)
        for p in (
            f"{plan.LANGUAGE}-{part}/dev-00000-of-00001.parquet"
            for part in ("queries", "top_ranked", "corpus")
        )
    }
    if id_map_method == "de.gz":
        data = build_equality_set(rows, read_id_map(id_map_path), topics, id_map_path=id_map_path)
        files[
            f"{plan.RERANKING_ID_MAP.repo}@{plan.RERANKING_ID_MAP.revision}:{plan.RERANKING_ID_MAP_PATH}"
        ] = sha256_file(id_map_path)
    elif id_map_method == "corpus":
        corpus = corpus_snapshot or snapshot_dir(plan.CORPUS_FULL)
        data = build_equality_set_from_corpus(
            rows,
            hub.iter_corpus_full(corpus),
            topics,
            corpus_label=f"{plan.CORPUS_FULL.repo}@{plan.CORPUS_FULL.revision}",
            total=plan.CORPUS_FULL_PASSAGES,
        )
    else:
        raise BenchError(
            f"unknown id map method {id_map_method!r}; choose one of {', '.join(ID_MAP_METHODS)}"
        )
    provenance = {
        **data.provenance,
        "files_sha256": files,
        "queries": [q.qid for q in data.queries],
        "text_rule_description": (
            "MIRACLReranking text as provided; a non-empty title is joined (title + newline + text) only "
            "where the text does not already start with it"
        ),
    }
    return dataclasses.replace(data, provenance=provenance)


def _default_loader(model_id: str, **kw: Any) -> Reranker:
    return load_reranker(model_id, **kw)


def _model_dir(model_id: str) -> Path:
    return resolve_snapshot(spec_for(model_id))


@dataclasses.dataclass
class _Scored:
    """A local model's adapter scores, its references still to run (the adapter is already unloaded)."""

    model_id: str
    meta: dict[str, Any]
    ours: dict[str, Any]
    mdir: Path
    deciding: ReferenceSpec | None
    further: list[ReferenceSpec]


def _score_adapter(
    model_id: str,
    data: EqualitySet,
    *,
    device: str,
    dtype: str | None,
    loader: Loader,
    model_dir: Path | None,
) -> dict[str, Any] | _Scored:
    """A final payload (API check, or not rated) or the adapter's scores with the references to compare."""
    if model_id not in plan.RERANKERS:
        raise BenchError(f"unknown model {model_id!r}; the plan's models: {', '.join(plan.RERANKERS)}")
    if not plan.RERANKERS[model_id].local:
        try:
            with loader(model_id) as api:  # type: ignore[attr-defined]
                return run_pointwise(model_id, api, data.queries)
        except Exception as exc:  # this model is not rated with the reason; the others go on
            return _not_rated(model_id, f"API check failed: {_text(exc)}")
    try:
        mdir = model_dir or _model_dir(model_id)
        kw: dict[str, Any] = {"dtype": dtype} if dtype is not None else {}
        reranker = loader(model_id, device=device, snapshot_dir=mdir, **kw)
    except Exception as exc:  # OSError, RuntimeError, ... from a model load: not rated, the others go on
        return _not_rated(model_id, f"adapter did not load: {_text(exc)}")
    dtype = reranker.meta.dtype if reranker.meta.dtype in TORCH_DTYPES else None

    def same_dtype(spec: ReferenceSpec | None) -> ReferenceSpec | None:
        """The adapter's dtype unless the reference fixes its own; remote code (gte) is looked up in the
        same hub cache as the adapter's (the snapshot's models root)."""
        if spec is None:
            return None
        options = {**spec.options, "cache_dir": str(mdir.parent.parent.parent)}
        return dataclasses.replace(spec, dtype=spec.dtype or dtype, options=options)

    further = [s for s in (same_dtype(f) for f in FURTHER.get(model_id, ())) if s is not None]
    meta = reranker.meta.to_dict()
    try:
        ours = adapter_scores(reranker, data.queries)
    except Exception as exc:  # recorded as "not rated" with the reason; the command still exits non-zero
        if is_sticky_device_error(exc):  # every later model would fail the same way: stop
            raise BenchError(
                f"{model_id}: {type(exc).__name__}: {exc}. A CUDA error of this kind leaves the process "
                "unable to use the GPU, so the checks stopped and no result of this run was written. Check "
                "the GPU (`bench doctor check-adapters`) and run the same command again"
            ) from exc
        reason = f"adapter failed while scoring: {type(exc).__name__}: {exc}"
        return _not_rated(model_id, reason, adapter=meta)
    finally:
        del reranker
        _release_memory()
    return _Scored(model_id, meta, ours, mdir, same_dtype(DECIDING.get(model_id)), further)


def check_one(
    model_id: str,
    data: EqualitySet,
    *,
    device: str = "cpu",
    dtype: str | None = None,
    loader: Loader | None = None,
    model_dir: Path | None = None,
    runner: ReferenceRunner | None = None,
) -> dict[str, Any]:
    """Check 1 (local model) or check 3 (Voyage) for one model; the result payload (not yet written).

    ``dtype`` None: the adapter's own choice on ``device`` (the vendor's on CUDA, float32 on the CPU), as
    ``bench quality`` makes it."""
    scored = _score_adapter(
        model_id, data, device=device, dtype=dtype, loader=loader or _default_loader, model_dir=model_dir
    )
    if not isinstance(scored, _Scored):
        return scored

    def default_runner(spec: ReferenceSpec, queries: Sequence[Any]) -> dict[str, Any]:
        return run_reference(spec, scored.mdir, queries, device=device)

    return _evaluate(scored, data, runner or default_runner)


def _evaluate(scored: _Scored, data: EqualitySet, runner: ReferenceRunner) -> dict[str, Any]:
    return evaluate(
        scored.model_id, scored.meta, scored.ours, data.queries, scored.deciding, scored.further, runner
    )


def _batched_references(
    scored: Sequence[_Scored], data: EqualitySet, device: str
) -> list[dict[str, dict[str, Any] | ReferenceUnavailable]]:
    """Every reference of every scored model run up front, one process per reference environment
    (``run_reference_batch``): per model, its references' results by ``repr(spec)``."""
    jobs = [(i, spec) for i, s in enumerate(scored) for spec in (s.deciding, *s.further) if spec is not None]
    results = (
        run_reference_batch([(spec, scored[i].mdir) for i, spec in jobs], data.queries, device=device)
        if jobs
        else []
    )
    out: list[dict[str, dict[str, Any] | ReferenceUnavailable]] = [{} for _ in scored]
    for (i, spec), result in zip(jobs, results, strict=True):
        out[i][repr(spec)] = result
    return out


def _answer_from(results: dict[str, dict[str, Any] | ReferenceUnavailable]) -> ReferenceRunner:
    def runner(spec: ReferenceSpec, queries: Sequence[Any]) -> dict[str, Any]:
        result = results[repr(spec)]
        if isinstance(result, ReferenceUnavailable):
            raise result
        return result

    return runner


def _text(exc: BaseException) -> str:
    """The exception's text as a reason; the type is named unless it is one of our own messages."""
    return str(exc) if isinstance(exc, BenchError) else f"{type(exc).__name__}: {exc}"


def _not_rated(model_id: str, reason: str, **extra: Any) -> dict[str, Any]:
    """The result payload of a model that could not be checked; the reason is recorded with it."""
    return {"model": model_id, "rated": False, "verdict": "not rated", **extra, "reason": reason}


def _release_memory() -> None:
    """Free the adapter before a reference subprocess loads the same model (one GPU holds one at a time)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def check_models(
    model_ids: Sequence[str],
    data: EqualitySet,
    *,
    device: str = SCORING_DEVICE,
    dtype: str | None = None,
    directory: Path | None = None,
    loader: Loader | None = None,
    manifest: Callable[..., dict[str, Any]] | None = None,
    preflight_record: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run the checks and write one result file per model (``results/adapter-checks/<model>.json``, or
    ``<model>@<device>-<dtype>.json`` for a setting other than the quality phase's default); every payload
    records the device and dtype the check ran with. Returns the payloads."""
    make_manifest = manifest or provenance_mod.collect_manifest
    directory = directory or results_dir()
    out = []
    scored: list[_Scored] = []
    payloads: list[dict[str, Any] | _Scored] = []
    with Progress("adapter checks (adapters)", len(model_ids), "models") as progress:
        for model_id in model_ids:
            try:
                got = _score_adapter(
                    model_id,
                    data,
                    device=device,
                    dtype=dtype,
                    loader=loader or _default_loader,
                    model_dir=None,
                )
            except Exception as exc:  # a failure of one model's check never stops the others
                got = _not_rated(model_id, f"check failed: {_text(exc)}")
                _release_memory()
            payloads.append(got)
            if isinstance(got, _Scored):
                scored.append(got)
            progress.advance()
    # the references of all models, one process per environment (each start imports torch): the adapters
    # are unloaded by now, and the reference process loads one model at a time
    references = iter(_batched_references(scored, data, device))
    with Progress("adapter checks (results)", len(model_ids), "models") as progress:
        for model_id, got in zip(model_ids, payloads, strict=True):
            if isinstance(got, _Scored):
                try:
                    payload = _evaluate(got, data, _answer_from(next(references)))
                except Exception as exc:  # a failure of one model's check never stops the others
                    payload = _not_rated(model_id, f"check failed: {_text(exc)}")
            else:
                payload = got
            adapter = payload.get("adapter") or {}
            payload.update(scoring_setting(model_id, device, dtype))  # what quality and latency compare
            payload["dtype_loaded"] = adapter.get("dtype")
            payload["data"] = dict(data.provenance)
            payload["preflight"] = preflight_record
            payload["manifest"] = make_manifest(
                kind="adapter-check", device=device, dtype=adapter.get("dtype"), root=repo_root()
            )
            payload["plan_sha256"] = payload["manifest"].get("plan_sha256")
            write_result(model_id, payload, directory)
            out.append(payload)
            progress.advance()
    return out
