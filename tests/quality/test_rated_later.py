"""The quality resume trap: ``bench quality`` skips a model that is not rated; the author runs
``bench check-adapters``, which passes it, commits the check file and resumes, as the runbook says ("fix
the cause and resume"). Before the fix the resume was refused as "different parameters (models)" because
the study recorded the rated set; now the set asked for is what must match, the newly rated model runs and
the manifest records that its check passed later (session, check file, SHA-256). Real parameter changes,
and a model rated before that is no longer rated, are still refused. ``bench determinism`` and ``bench
dtype-check`` open their studies through the same ``run_session``/``Study.start``; the Study-level tests
below cover them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.core.errors import BenchError
from bench.equality.results import result_path, scoring_setting, write_result
from bench.integrity.hashing import sha256_file
from bench.quality.study import Study, read_manifest
from tests.conftest import git
from tests.quality.test_dtype_check_sessions import _dtype_check
from tests.quality.test_dtype_check_sessions import project as dtype_project  # noqa: F401 (fixture)
from tests.quality.test_quality_api_and_local import voyage  # noqa: F401 (fixture)
from tests.quality.test_resume_after_commit import API, _quality, _sessions, project  # noqa: F401 (fixture)
from tests.support.voyage_api import FakeVoyage


def _file(model: str, setting: dict[str, str]) -> str:
    return result_path(model, Path("."), setting).name


VOYAGE_CHECK = "results/adapter-checks/voyage-rerank-3.json"


def _manifest(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "studies" / "quality" / "manifest.json").read_text(encoding="utf-8")))


def test_model_rated_after_the_first_session_joins_the_study(
    project: Path,  # noqa: F811
    voyage: FakeVoyage,  # noqa: F811
) -> None:
    root = project
    checks = root / "results" / "adapter-checks"
    failed = {"model": "voyage-rerank-3", "rated": False, "reason": "check 1 failed", **API}
    write_result("voyage-rerank-3", failed, checks)
    git(root, "commit", "-q", "-am", "voyage check failed")
    res = _quality()
    assert res.exit_code == 0, res.output
    assert "skipped voyage-rerank-3: not rated (check 1 failed)" in res.output
    assert not list((root / "runs" / "hybrid-71k").glob("voyage-rerank-3@*"))
    assert _manifest(root)["study"]["params"]["models"] == ["bge-v2-m3"]

    write_result(
        "voyage-rerank-3",
        {"model": "voyage-rerank-3", "rated": True, "reason": "passed later", "pointwise": True, **API},
        checks,
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "quality: bge runs; voyage adapter check passed")
    res = _quality()
    assert res.exit_code == 0, res.output
    assert "different parameters" not in res.output
    assert len(list((root / "runs" / "hybrid-71k").glob("voyage-rerank-3@*.trec"))) == 3
    manifest = _manifest(root)
    later = manifest["study"]["rated_later"]
    assert set(later) == {"voyage-rerank-3"}
    assert later["voyage-rerank-3"]["session"] == 1 and later["voyage-rerank-3"]["check_file"] == VOYAGE_CHECK
    assert later["voyage-rerank-3"]["check_sha256"] == sha256_file(root / VOYAGE_CHECK)
    assert manifest["sessions"][1]["rated_later"] == ["voyage-rerank-3"]
    assert manifest["study"]["params"]["models"] == ["bge-v2-m3", "voyage-rerank-3"]
    assert manifest["study"]["params"]["requested_models"] == ["bge-v2-m3", "voyage-rerank-3"]
    assert manifest["skipped_models"] == {}

    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "quality: voyage runs")
    res = _quality()  # a third session: nothing new, nothing rated later, nothing refused
    assert res.exit_code == 0, res.output
    assert "rated_later" not in _sessions(root)[2]
    assert set(_manifest(root)["study"]["rated_later"]) == {"voyage-rerank-3"}


PARAMS = {
    "stages": ["s1"],
    "requested_models": ["m", "n"],
    "models": ["m"],
    "depths": [20, 50, 100],
    "device": "cuda",
    "dtype": None,
    "per_depth": [],
    "max_queries": None,
    "devices": {"m": "cuda"},
    "dtypes": {"m": None},
}
GROWN = {
    **PARAMS,
    "models": ["m", "n"],
    "devices": {"m": "cuda", "n": "cuda"},
    "dtypes": {"m": None, "n": None},
}


def _start(d: Path, plan: Path, params: dict[str, Any]) -> Study:
    return Study.start(
        d,
        kind="measurement",
        plan_path=plan,
        params=params,
        provenance={"git": {"commit": "a" * 40}},
        preflight=None,
    )


def test_study_accepts_only_the_rated_set_growing(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("# plan\n", encoding="utf-8")
    _start(tmp_path / "st", plan, PARAMS).end("complete")
    refused = [
        {**GROWN, "depths": [100]},
        {**GROWN, "stages": ["s1", "s2"]},
        {**GROWN, "dtype": "float32"},
        {**GROWN, "max_queries": 20},
        {**GROWN, "requested_models": ["m", "n", "o"], "models": ["m", "n", "o"]},
        {**GROWN, "models": ["n"], "devices": {"n": "cuda"}, "dtypes": {"n": None}},  # m no longer rated
        {**GROWN, "per_depth": ["m", "n"]},  # m was called once for all depths
        {**GROWN, "dtypes": {"m": "float16", "n": None}},
    ]
    for params in refused:
        with pytest.raises(BenchError, match="different parameters"):
            _start(tmp_path / "st", plan, params)
    assert read_manifest(tmp_path / "st")["study"]["params"] == PARAMS  # nothing changed by a refusal
    s = _start(tmp_path / "st", plan, GROWN)
    assert s.rated_later == ["n"] and read_manifest(tmp_path / "st")["study"]["params"] == GROWN


def test_manifest_without_requested_models_compared_strictly(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("# plan\n", encoding="utf-8")
    old = {k: v for k, v in PARAMS.items() if k != "requested_models"}
    _start(tmp_path / "st", plan, old).end("complete")
    with pytest.raises(BenchError, match=r"different parameters \(devices, dtypes, models\)"):
        _start(tmp_path / "st", plan, {k: v for k, v in GROWN.items() if k != "requested_models"})


def test_dtype_check_model_rated_later_runs_in_both_sessions(
    dtype_project: dict[str, Any],  # noqa: F811
) -> None:
    """The same trap in ``bench dtype-check``: qwen3-0.6b's check failed, both sessions skip it (exit 1,
    a required model not checked); its check passes later, the resume runs it in both sessions."""
    root: Path = dtype_project["root"]
    dtype_project["interrupt_gpu"] = False
    checks = root / "results" / "adapter-checks"
    m = "qwen3-0.6b"
    settings = (scoring_setting(m), scoring_setting(m, "cpu"))
    for setting in settings:
        write_result(m, {"model": m, "rated": False, "reason": "check 2 failed", **setting}, checks)
    git(root, "commit", "-q", "-am", "qwen3-0.6b check failed")
    res = _dtype_check()
    assert res.exit_code == 1 and "qwen3-0.6b" in res.output, res.output
    assert m not in {x for _, x in dtype_project["loads"]}
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "dtype-check: sessions without qwen3-0.6b")

    for setting in settings:
        write_result(m, {"model": m, "rated": True, "reason": "passed later", **setting}, checks)
    git(root, "commit", "-q", "-am", "qwen3-0.6b check passed")
    dtype_project["loads"].clear()
    res = _dtype_check()
    assert res.exit_code == 0, res.output
    assert dtype_project["loads"] == [("cpu-fp32", m), ("gpu", m)]  # only the newly rated model runs
    # Both sessions are rated by the check of the GPU setting they compare (``--gpu cpu`` here: the CPU
    # float32 check), not the CPU session by the default setting's file.
    for name in ("cpu-fp32", "gpu"):
        manifest = read_manifest(root / "studies" / "dtype-check" / name)
        entry = manifest["study"]["rated_later"][m]
        assert entry["session"] == 1
        assert entry["check_file"] == f"results/adapter-checks/{_file(m, settings[1])}"
        assert entry["check_sha256"] == sha256_file(root / entry["check_file"])
