"""The quality loop: journal records, resume, errors, listwise depths, frozen candidates, run files."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from analysis.inputs.trec import read_run
from bench.core.errors import BenchError
from bench.core.journal import Journal
from bench.quality.candidates import freeze
from bench.quality.phase import PhaseSpec, run_phase, strip_timing
from bench.quality.runs import pointwise_consistency, write_runs
from tests.quality.fakes import make_inputs
from tests.support.fakes import FakeReranker

SPEC = PhaseSpec(
    stages=("s1", "s2"), models=("point", "listy"), depths=(20, 50, 100), per_depth=frozenset({"listy"})
)


def _run(
    tmp: Path,
    spec: PhaseSpec = SPEC,
    *,
    fail_on: str | None = None,
    max_units: int | None = None,
    loads: list[str] | None = None,
) -> tuple[Path, Any]:
    sources, queries, texts = make_inputs(tmp / "in")
    study = tmp / "study"
    cands = freeze(study, sources)
    count = {"n": 0}

    def limited(fake: FakeReranker, q: str, p: Any) -> None:  # Ctrl-C after max_units calls of all models
        count["n"] += 1
        if max_units is not None and count["n"] > max_units:
            raise KeyboardInterrupt

    def load(model: str) -> FakeReranker:
        if loads is not None:
            loads.append(model)
        return FakeReranker(model, listwise=model == "listy", fail_on=fail_on, on_call=limited)

    with Journal(study / "journal.jsonl") as j:
        outcome = run_phase(j, cands, queries, texts, load, spec, stream=io.StringIO())
        write_runs(j, cands, spec, tmp / "runs")
    return study, outcome


def test_full_phase_writes_journal_and_runs(tmp_path: Path) -> None:
    study, outcome = _run(tmp_path)
    assert outcome.scored == 2 * 6 * (1 + 3) and outcome.errors == 0
    with Journal(study / "journal.jsonl") as j:
        recs = j.records
    assert {(r["model"], r["depth"]) for r in recs} == {
        ("point", 100),
        ("listy", 20),
        ("listy", 50),
        ("listy", 100),
    }
    r0 = recs[0]
    assert r0["status"] == "ok" and len(r0["docids"]) == 100 and len(r0["scores"]) == 100
    assert isinstance(r0["latency_ns"], int) and r0["latency_ns"] > 0
    assert r0["call"]["n"] == 100
    for stage in ("s1", "s2"):
        for model in ("point", "listy"):
            for k in (20, 50, 100):
                run = read_run(tmp_path / "runs" / stage / f"{model}@{k}.trec")
                assert len(run) == 6 and all(len(v) == 100 for v in run.values())
    head = (tmp_path / "runs" / "s1" / "point@20.trec").read_text().splitlines()[0].split()
    assert head[5] == "s1/point@20"
    # pointwise depth 20 = first 20 candidates of the depth-100 scores, reranked
    p100 = next(r for r in recs if r["model"] == "point" and r["stage"] == "s1")
    run20 = read_run(tmp_path / "runs" / "s1" / "point@20.trec")[p100["qid"]]
    assert [d for d, _ in run20[:20]] == sorted(
        p100["docids"][:20], key=lambda d: (-p100["scores"][p100["docids"].index(d)], p100["docids"].index(d))
    )
    assert [d for d, _ in run20[20:]] == p100["docids"][20:]


def test_resume_skips_done_units_and_matches_uninterrupted(tmp_path: Path) -> None:
    full, _ = _run(tmp_path / "a")
    loads: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "b", max_units=17, loads=loads)
    with Journal(tmp_path / "b" / "study" / "journal.jsonl") as j:
        assert len(j) == 17  # the interrupted 18th call left nothing behind
    loads.clear()
    _, outcome = _run(tmp_path / "b", loads=loads)
    assert outcome.skipped == 17
    assert loads == ["listy"]  # "point" (12 units) was complete: not loaded again
    with Journal(full / "journal.jsonl") as a, Journal(tmp_path / "b" / "study" / "journal.jsonl") as b:
        assert [strip_timing(r) for r in a] == [strip_timing(r) for r in b]
    for f in sorted((tmp_path / "a" / "runs").rglob("*.trec")):
        rel = f.relative_to(tmp_path / "a" / "runs")
        assert f.read_bytes() == (tmp_path / "b" / "runs" / rel).read_bytes()
    _, again = _run(tmp_path / "b", loads=loads)
    assert again.scored == 0 and loads == ["listy"]  # a finished study loads no model


def test_errors_are_recorded_without_latency_and_stay_in_denominators(tmp_path: Path) -> None:
    spec = PhaseSpec(stages=("s1",), models=("point",), depths=(20, 100))
    study, outcome = _run(tmp_path, spec, fail_on="frage 3")
    assert outcome.errors == 1
    with Journal(study / "journal.jsonl") as j:
        bad = [r for r in j if r["status"] == "error"]
    assert len(bad) == 1 and bad[0]["latency_ns"] is None and bad[0]["scores"] is None
    assert "simulated failure" in bad[0]["error"]
    run = read_run(tmp_path / "runs" / "s1" / "point@100.trec")
    assert len(run) == 5 and "3#0" not in run


def test_rehearsal_timing_calls_agree_with_derived_scores(tmp_path: Path) -> None:
    spec = PhaseSpec(stages=("s1",), models=("point",), depths=(20, 50, 100), extra_timing_depths=True)
    study, outcome = _run(tmp_path, spec)
    assert outcome.scored == 6 * 3
    with Journal(study / "journal.jsonl") as j:
        assert pointwise_consistency(j, spec) == {"point": 0.0}


def test_changed_candidate_file_refuses_resume(tmp_path: Path) -> None:
    _run(tmp_path, PhaseSpec(stages=("s1", "s2"), models=("point",), depths=(100,)))
    src = tmp_path / "in" / "first-stage" / "s1.trec"
    src.write_text(src.read_text().replace("first-stage/s1", "first-stage/x"))
    with pytest.raises(BenchError, match=r"s1\.trec changed since this study froze it"):
        freeze(tmp_path / "study", {"s1": src, "s2": tmp_path / "in" / "first-stage" / "s2.trec"})


def test_modified_frozen_copy_refuses_resume(tmp_path: Path) -> None:
    sources, _, _ = make_inputs(tmp_path / "in")
    freeze(tmp_path / "study", sources)
    (tmp_path / "study" / "candidates" / "s2.trec").write_text("x")
    with pytest.raises(BenchError, match="frozen candidates of s2"):
        freeze(tmp_path / "study", sources)


def test_other_stage_set_refused(tmp_path: Path) -> None:
    sources, _, _ = make_inputs(tmp_path / "in")
    freeze(tmp_path / "study", sources)
    with pytest.raises(BenchError, match="froze candidates for stages"):
        freeze(tmp_path / "study", {"s1": sources["s1"]})


def test_missing_first_stage_run(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="first-stage run for s9 missing"):
        freeze(tmp_path / "study", {"s9": tmp_path / "nope.trec"})
