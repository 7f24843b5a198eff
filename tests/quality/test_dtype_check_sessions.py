"""``bench dtype-check`` can finish. Its CPU session writes run files under
``results/dtype-check/``; before the fix its GPU session then refused the dirty tree, and once those files
were committed the resume refused the new commit. Here, in a temporary git repository laid out as the
project: the GPU session is interrupted (Ctrl-C while loading its first model) after the CPU session
finished; the CPU session's files are committed; the resume runs the GPU session from the new commit and
the command finishes with its verdicts. The CPU stands in for the GPU (``--gpu cpu``) and a deterministic
fake adapter for the four models (it scores the same on both devices, so the rule passes); the clean-code
check, the manifests and the study resume are the real ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.core.paths import repo_root
from bench.core.plan import DTYPE_CHECK_MODELS
from bench.equality.results import scoring_setting, write_result
from tests.conftest import git
from tests.quality.fakes import make_inputs
from tests.support.fakes import FakeReranker


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for rel in ("PLAN.md", "pyproject.toml", ".gitignore", "bench/records/codeversion.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(repo_root() / rel, root / rel)
    _, queries, texts = make_inputs(root / "runs", n_queries=4, stages=("hybrid-71k",))
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("".join(f"{q}\t0\t{i}#0\t1\n" for i, q in enumerate(queries)), encoding="utf-8")
    for m in DTYPE_CHECK_MODELS:  # checked in the GPU setting (m.json) and where this test's "GPU" runs
        for setting in (scoring_setting(m), scoring_setting(m, "cpu")):
            write_result(
                m,
                {"model": m, "rated": True, "reason": "test", **setting},
                root / "results" / "adapter-checks",
            )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "code, first stage, adapter checks")
    state: dict[str, Any] = {"root": root, "interrupt_gpu": True, "loads": []}

    def load_run_model(model: str, *, device: str = "cpu", dtype: str | None = None, **kw: Any) -> Any:
        session = "cpu-fp32" if dtype == "float32" else "gpu"
        state["loads"].append((session, model))
        if session == "gpu" and state["interrupt_gpu"]:
            raise KeyboardInterrupt  # Ctrl-C while the GPU session loads its first model
        return FakeReranker(model)

    monkeypatch.setenv("BENCH_ROOT", str(root))
    monkeypatch.setattr("bench.quality.cli.repo_root", lambda: root)
    monkeypatch.setattr("bench.rerankers.registry.load_run_model", load_run_model)
    monkeypatch.setattr("bench.records.guard.preflight", lambda kind, **kw: {"kind": kind})
    monkeypatch.setattr("bench.quality.inputs.study_queries", lambda: (queries, qrels))
    monkeypatch.setattr("bench.quality.inputs.candidate_texts", lambda candidates: texts)
    return state


def _dtype_check() -> Any:
    from bench.quality.cli import dtype_check

    return CliRunner().invoke(dtype_check, ["--gpu", "cpu"])


def test_cpu_session_then_commit_then_gpu_session(project: dict[str, Any]) -> None:
    root: Path = project["root"]
    out = root / "results" / "dtype-check"
    res = _dtype_check()
    assert res.exit_code == 130, res.output  # interrupted in the GPU session, not refused before it
    cpu_loads = [("cpu-fp32", m) for m in DTYPE_CHECK_MODELS]
    assert project["loads"] == [*cpu_loads, ("gpu", DTYPE_CHECK_MODELS[0])]
    cpu_runs = sorted(p.name for p in (out / "cpu-fp32" / "runs" / "hybrid-71k").glob("*.trec"))
    assert cpu_runs == sorted(f"{m}@100.trec" for m in DTYPE_CHECK_MODELS)
    gpu_study = json.loads((root / "studies/dtype-check/gpu/manifest.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in gpu_study["sessions"]] == ["interrupted"]

    git(root, "add", "results")
    git(root, "commit", "-q", "-m", "dtype-check: CPU session")
    project["interrupt_gpu"] = False
    project["loads"].clear()
    res = _dtype_check()
    assert res.exit_code == 0, res.output
    assert project["loads"] == [("gpu", m) for m in DTYPE_CHECK_MODELS]  # the CPU session is not redone
    verdicts = json.loads((out / "verdicts.json").read_text(encoding="utf-8"))
    assert verdicts["decision"]["all_passed"] is True
    assert len(verdicts["verdicts"]) == len(DTYPE_CHECK_MODELS)
    gpu_study = json.loads((root / "studies/dtype-check/gpu/manifest.json").read_text(encoding="utf-8"))
    sessions = gpu_study["sessions"]
    assert [s["status"] for s in sessions] == ["interrupted", "complete"]
    first, second = (s["provenance"]["git"] for s in sessions)
    assert first["commit"] != second["commit"] and first["code_digest"] == second["code_digest"]
