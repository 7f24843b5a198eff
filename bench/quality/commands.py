"""Library functions behind ``bench quality``, ``bench determinism`` and ``bench dtype-check``.

- ``quality_session``: every rated reranker on the plan's reranked stages, depth 100 (pointwise models) or
  every depth (listwise models, and Voyage models whose check 3 did not find them pointwise). A model that
  is not rated (``bench.equality.results.outcome``) is skipped and the reason recorded in the manifest.
- ``determinism``: the plan's three models rerun on hybrid-71k into their own study directory and run
  files; ``analysis.reporting.checks.determinism`` is applied to nDCG@10 of the first and the second run.
- ``dtype_check``: the plan's four models on the first 20 queries (sorted ids) of hybrid-71k at depth
  100, once on the CPU in float32 and once on the GPU in the vendor dtype, each its own study;
  ``analysis.reporting.checks.dtype_rule`` is applied per model to nDCG@10 over those 20 queries.
Measurements refuse uncommitted code (``bench.records.codeversion.require_clean_code``) and run ``preflight``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from bench.core.plan import RERANKERS
from bench.quality import inputs
from bench.quality.driver import SessionResult, execute
from bench.quality.library import Setup, lock_names, open_measurement, rated
from bench.quality.phase import PhaseSpec
from bench.quality.study import Study
from bench.rerankers import registry
from bench.rerankers.protocol import Reranker


def per_depth_models(models: Sequence[str], outcomes: Mapping[str, Mapping[str, Any]]) -> frozenset[str]:
    """Models called separately at every depth: listwise ones, and API models not shown pointwise."""
    out = set()
    for m in models:
        plan = RERANKERS.get(m)
        if plan is not None and plan.listwise:
            out.add(m)
        elif plan is not None and not plan.local and outcomes.get(m, {}).get("pointwise") is not True:
            out.add(m)
    return frozenset(out)


def model_device(model: str, device: str) -> str:
    """Where ``model`` runs: the session's device for a local model, "api" for an API model."""
    plan = RERANKERS.get(model)
    return "api" if plan is not None and not plan.local else device


def model_dtype(model: str, dtype: str | None) -> str | None:
    """The requested dtype (None: the vendor's, recorded by the adapter); "api" for an API model."""
    plan = RERANKERS.get(model)
    return "api" if plan is not None and not plan.local else dtype


def _loader(device: str, dtype: str | None = None) -> Any:
    def load(model: str) -> Reranker:
        if model_device(model, device) == "api":  # an API model takes no local device or dtype
            return registry.load_run_model(model, device="api")
        return registry.load_run_model(model, device=device, dtype=dtype)

    return load


def run_session(
    setup: Setup,
    *,
    stages: Sequence[str],
    models: Sequence[str],
    depths: Sequence[int],
    resume_hint: str,
    what: str,
    max_queries: int | None = None,
    dtype: str | None = None,
    rated_by: tuple[str, str | None] | None = None,
) -> tuple[Study, SessionResult, dict[str, str]]:
    """One quality-phase session. A model needs a passed adapter check on this session's device and dtype;
    ``rated_by`` (device, requested dtype) names another setting whose check rates the models instead: only
    the data-type check's CPU session passes it, the GPU setting it compares with (the plan's comparison of
    CPU fp32 against the checked GPU setting; with ``--gpu cpu`` that check is ``<model>@cpu-float32.json``,
    not ``<model>.json``)."""
    check_device, check_dtype = rated_by or (setup.device, dtype)
    keep, skipped, outcomes = rated(list(models), setup.checks_dir, device=check_device, dtype=check_dtype)
    per_depth = per_depth_models(keep, outcomes)
    params = {
        "stages": list(stages),
        "requested_models": list(models),
        "models": list(keep),
        "depths": list(depths),
        "device": setup.device,
        "dtype": dtype,
        "per_depth": sorted(per_depth),
        "max_queries": max_queries,
        "devices": {m: model_device(m, setup.device) for m in keep},
        "dtypes": {m: model_dtype(m, dtype) for m in keep},
    }
    study = open_measurement(setup, params, lock_names=lock_names(stages))  # refusals first
    study.manifest["skipped_models"] = skipped
    study.manifest["adapter_checks"] = outcomes
    study.save()
    if study.rated_later:  # not rated in an earlier session, rated now: runs in this one
        study.record_rated_later(outcomes, setup.root)
        for m in study.rated_later:
            entry = study.manifest["study"]["rated_later"][m]
            print(
                f"{m}: rated since the study began ({entry['check_file']}, SHA-256 "
                f"{entry['check_sha256']}); it runs in this session",
                file=sys.stderr,
            )
    queries, _ = inputs.study_queries()
    only = frozenset(sorted(queries)[:max_queries]) if max_queries is not None else None
    spec = PhaseSpec(
        stages=tuple(stages), models=tuple(keep), depths=tuple(depths), per_depth=per_depth, queries=only
    )
    sources = {s: setup.first_stage_dir / f"{s}.trec" for s in stages}
    session = execute(
        study,
        sources=sources,
        queries=queries,
        texts=inputs.candidate_texts,
        load=_loader(setup.device, dtype),
        spec=spec,
        runs_dir=setup.runs_dir,
        resume_hint=resume_hint,
        what=what,
    )
    return study, session, skipped
