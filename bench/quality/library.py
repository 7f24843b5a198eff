"""The quality phase's library, shared with the phases that measure as it does (``bench int8 quality``,
``bench judged prepare``): the session setup (:class:`Setup`), the datasets.lock entries a session reads,
the adapter checks' verdict (:func:`rated`) and the opening of a measurement (clean code, preflight,
provenance, the study). ``bench.quality.commands`` runs the phase's sessions on top of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.plan import RERANKERS
from bench.core.reads import stage_reads
from bench.equality.results import outcome, outcome_for
from bench.quality.study import Study
from bench.records import codeversion, guard, provenance
from bench.rerankers.registry import base_model


def lock_names(stages: Sequence[str]) -> list[str]:
    """datasets.lock entries a quality session reads (``bench.core.reads.stage_reads``)."""
    return stage_reads(stages)


@dataclass(frozen=True)
class Setup:
    root: Path
    study_dir: Path
    runs_dir: Path
    first_stage_dir: Path
    checks_dir: Path
    device: str
    kind: str = "measurement"


def rated(
    models: Sequence[str], checks_dir: Path, *, device: str | None = None, dtype: str | None = None
) -> tuple[list[str], dict[str, str], dict[str, Any]]:
    """(rated models, skipped model -> reason, all outcomes) from the adapter-check result files.

    With ``device`` (and the requested ``dtype``), a plan model counts as rated only by a check that ran in
    the setting its scores will be produced with: a model checked only on another device or
    dtype is refused, before anything is written, naming both settings and the check to run."""

    def check(model: str) -> dict[str, Any]:
        base = base_model(model)  # a pitfalls variant is rated when its plan model (qwen3-0.6b) passed
        if device is None or base not in RERANKERS:
            return outcome(base, checks_dir)
        return outcome_for(base, checks_dir, device, dtype)

    outcomes = {m: check(m) for m in models}
    elsewhere = {m: o for m, o in outcomes.items() if "checked_setting" in o}
    if elsewhere:
        raise BenchError(
            "refused: "
            + "; ".join(f"{m}: {o['reason']}" for m, o in elsewhere.items())
            + ". Nothing was written; check them in this setting first, or leave them out (--model)."
        )
    keep = [m for m in models if outcomes[m]["rated"]]
    skipped = {m: str(outcomes[m]["reason"]) for m in models if not outcomes[m]["rated"]}
    return keep, skipped, outcomes


def open_measurement(setup: Setup, params: Mapping[str, Any], *, lock_names: Sequence[str]) -> Study:
    """Clean code, preflight, provenance, then create or resume the study (refusals named there)."""
    codeversion.require_clean_code(setup.root)
    pre = guard.preflight("measurement", lock_names=lock_names, root=setup.root)
    prov = provenance.collect_manifest(kind=setup.kind, device=setup.device, root=setup.root)
    return Study.start(
        setup.study_dir,
        kind="measurement",
        plan_path=setup.root / "PLAN.md",
        params=params,
        provenance=prov,
        preflight=pre,
        root=setup.root,
    )
