"""``bench quality`` runs a local model and a Voyage model in one study; a rejected key
stops the Voyage model as "not run" and a resume after the fix scores it; a transient API failure is
retried on resume. The Voyage endpoint is a loopback HTTP server speaking the rerank JSON."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.core.journal import Journal
from bench.core.paths import repo_root
from bench.equality.results import write_result
from bench.quality.candidates import freeze
from bench.quality.phase import PhaseSpec, run_phase
from bench.rerankers.voyage import VoyageReranker
from tests.quality.fakes import make_inputs
from tests.support.voyage_api import FakeVoyage

KEY = "pa-LOOPBACK-test-key"
MODELS = ("bge-v2-m3", "voyage-rerank-3")


def _score(query: str, index: int, passage: str) -> float:
    return 1 / (1 + len(passage) + index)


@pytest.fixture
def voyage() -> Iterator[FakeVoyage]:
    with FakeVoyage(score=_score, key=KEY, keep_alive=False) as server:  # 401 for any other key
        yield server


@pytest.fixture
def study_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, voyage: FakeVoyage) -> dict[str, Path]:
    """A measurement setting on loopback: tiny bge snapshot, the Voyage fake, 4 queries on hybrid-71k, both
    models rated; lock, stamp and clean-tree checks replaced (they have their own tests)."""
    from tests.support.tiny_models import tiny_models_root

    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(repo_root() / "PLAN.md", root / "PLAN.md")
    tiny_models_root(tmp_path / "models", ("bge-v2-m3",))
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    monkeypatch.setenv("VOYAGE_BASE_URL", voyage.url)
    sources, queries, texts = make_inputs(tmp_path / "in", n_queries=4, stages=("hybrid-71k",))
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("".join(f"{q}\t0\t1#0\t1\n" for q in queries), encoding="utf-8")
    checks = tmp_path / "checks"
    # checked where these tests score: the CPU in place of CUDA, and the API
    write_result(
        "bge-v2-m3",
        {"model": "bge-v2-m3", "rated": True, "reason": "test", "device": "cpu", "dtype": "float32"},
        checks,
    )
    write_result(
        "voyage-rerank-3",
        {
            "model": "voyage-rerank-3",
            "rated": True,
            "reason": "test",
            "pointwise": True,
            "device": "api",
            "dtype": "api",
        },
        checks,
    )
    monkeypatch.setattr("bench.quality.cli.repo_root", lambda: root)
    monkeypatch.setattr("bench.records.guard.preflight", lambda kind, **kw: {"kind": kind})
    monkeypatch.setattr("bench.records.codeversion.require_clean_code", lambda root=None: {})
    monkeypatch.setattr(
        "bench.records.provenance.collect_manifest",
        lambda **kw: {"git": {"commit": "c" * 40}, "device": kw.get("device")},
    )
    monkeypatch.setattr("bench.quality.inputs.study_queries", lambda: (queries, qrels))
    monkeypatch.setattr("bench.quality.inputs.candidate_texts", lambda candidates: texts)
    return {
        "root": root,
        "first": sources["hybrid-71k"].parent,
        "checks": checks,
        "study": tmp_path / "study",
        "runs": tmp_path / "runs",
    }


def _quality(env: dict[str, Path]) -> Any:
    from bench.quality.cli import quality

    args = [
        "--study",
        str(env["study"]),
        "--runs",
        str(env["runs"]),
        "--first-stage",
        str(env["first"]),
        "--checks",
        str(env["checks"]),
        "--stage",
        "hybrid-71k",
        "--device",
        "cpu",
    ]
    for m in MODELS:
        args += ["--model", m]
    return CliRunner().invoke(quality, args)


def _run_files(env: dict[str, Path]) -> set[str]:
    return {p.name for p in (env["runs"] / "hybrid-71k").glob("*.trec")} if env["runs"].exists() else set()


def test_local_and_voyage_model_in_one_study(study_env: dict[str, Path]) -> None:
    res = _quality(study_env)
    assert res.exit_code == 0, res.output
    assert _run_files(study_env) == {f"{m}@{k}.trec" for m in MODELS for k in (20, 50, 100)}
    manifest = json.loads((study_env["study"] / "manifest.json").read_text(encoding="utf-8"))
    params = manifest["study"]["params"]
    assert params["devices"] == {"bge-v2-m3": "cpu", "voyage-rerank-3": "api"}
    assert params["dtypes"] == {"bge-v2-m3": None, "voyage-rerank-3": "api"}
    metas = {m: manifest["models"][m]["meta"] for m in MODELS}
    assert metas["bge-v2-m3"]["device"] == "cpu" and metas["bge-v2-m3"]["dtype"] == "float32"
    assert metas["voyage-rerank-3"]["device"] == "api" and metas["voyage-rerank-3"]["dtype"] == "api"
    assert metas["voyage-rerank-3"]["extra"]["endpoint"].startswith("http://127.0.0.1:")
    check2 = manifest["check2"]  # plan check 2 ran inside bench quality, on every run written
    assert len(check2["runs"]) == 6 and check2["error"] is None
    assert all(r["max_abs_diff"] <= 1e-4 for r in check2["runs"])
    # the stand-ins' scores tie within every one of the 4 queries: nothing could be compared in pytrec_eval's
    # own order, so the check says NOT COMPARED, never passed, and ends nothing
    assert [(r["verdict"], r["queries_with_ties"]) for r in check2["runs"]] == [("NOT COMPARED", 4)] * 6
    assert check2["passed"] is False and check2["verdict"] == "NOT COMPARED"
    assert "plan check 2 (nDCG@10 vs pytrec_eval, 6 runs): NOT COMPARED" in res.output


def test_rejected_key_stops_the_model_as_not_run_and_a_resume_scores_it(
    study_env: dict[str, Path], voyage: FakeVoyage
) -> None:
    voyage.key = "pa-another-key"  # the server no longer takes ours
    res = _quality(study_env)
    assert res.exit_code == 1 and "not run: voyage-rerank-3" in res.output
    assert len(voyage.requests) == 1  # the model was stopped at the first 401, not called for every query
    assert _run_files(study_env) == {f"bge-v2-m3@{k}.trec" for k in (20, 50, 100)}
    manifest = json.loads((study_env["study"] / "manifest.json").read_text(encoding="utf-8"))
    assert "401" in manifest["models"]["voyage-rerank-3"]["not_run"]["reason"]
    with Journal(study_env["study"] / "journal.jsonl") as j:
        assert not [r for r in j if r["model"] == "voyage-rerank-3"]  # no per-query errors recorded
    voyage.key = KEY  # the key is fixed
    res = _quality(study_env)
    assert res.exit_code == 0, res.output
    assert _run_files(study_env) == {f"{m}@{k}.trec" for m in MODELS for k in (20, 50, 100)}
    manifest = json.loads((study_env["study"] / "manifest.json").read_text(encoding="utf-8"))
    assert "not_run" not in manifest["models"]["voyage-rerank-3"]
    assert manifest["sessions"][0]["not_run"] and manifest["sessions"][1]["not_run"] == {}


def test_transient_failure_is_retried_on_resume(tmp_path: Path, voyage: FakeVoyage) -> None:
    sources, queries, texts = make_inputs(tmp_path / "in", n_queries=3, stages=("s1",))
    cands = freeze(tmp_path / "study", sources)
    spec = PhaseSpec(stages=("s1",), models=("voyage-rerank-3",), depths=(100,))
    flaky = next(iter(queries))
    voyage.fail_queries = {queries[flaky]}

    def load(model: str) -> VoyageReranker:
        return VoyageReranker(model, api_key=KEY, base_url=voyage.url, max_attempts=2, sleep=lambda s: None)

    path = tmp_path / "study" / "journal.jsonl"
    with Journal(path) as j:
        first = run_phase(j, cands, queries, texts, load, spec, stream=io.StringIO())
        rec = j.get(("s1", "voyage-rerank-3", 100, flaky))
    assert first.errors == 1 and rec is not None and rec["status"] == "error" and rec["retry"] is True
    voyage.fail_queries = set()
    with Journal(path) as j:  # the resume retries only the failed query; the failed attempt stays on file
        second = run_phase(j, cands, queries, texts, load, spec, stream=io.StringIO())
        assert second.scored == 1 and second.retried == 1 and second.skipped == 2
        assert j.get(("s1", "voyage-rerank-3", 100, flaky))["status"] == "ok"  # type: ignore[index]
        assert [r["status"] for r in j.superseded] == ["error"]
        assert len(j) == 3
    assert path.read_bytes().count(b"\n") == 4
    with Journal(path) as j:  # reopening accepts the superseded attempt
        assert len(j) == 3 and len(j.superseded) == 1
