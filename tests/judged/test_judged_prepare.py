"""``bench judged prepare``'s groups: the three best rated models on hybrid-71k by nDCG@10 and the best on
keyword-full, runs only from the given study; bad input named in one line. ``bench judged run`` refuses a
missing key and an unknown model before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis.inputs.trec import write_run
from bench.cli import cli
from bench.core.errors import BenchError
from bench.equality.results import scoring_setting, write_result
from bench.judged.prepare import plan_groups

QUERIES = [f"q{i}" for i in range(8)]
QRELS = {q: {f"{q}#rel": 1, f"{q}#non": 0} for q in QUERIES}


def _run(relevant_rank: int) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for q in QUERIES:
        docs = [f"{q}#u{j}" for j in range(5)]
        docs.insert(relevant_rank - 1, f"{q}#rel")
        out[q] = [(d, float(-i)) for i, d in enumerate(docs)]
    return out


def study(
    tmp_path: Path, hybrid: dict[str, int], full: dict[str, int], rated: dict[str, bool]
) -> tuple[Path, Path, Path]:
    runs, checks, study_dir = tmp_path / "runs", tmp_path / "checks", tmp_path / "studies" / "quality"
    listed = []
    for stage, models in (("hybrid-71k", hybrid), ("keyword-full", full)):
        for m, rank in models.items():
            p = runs / stage / f"{m}@100.trec"
            write_run(p, _run(rank), tag=f"{stage}/{m}@100")
            listed.append(
                {"stage": stage, "model": m, "depth": 100, "path": str(p), "queries": 8, "errors": 0}
            )
    for m, ok in rated.items():  # checked in the quality phase's default setting, as check-adapters records
        write_result(m, {"model": m, "rated": ok, "reason": "test", **scoring_setting(m)}, checks)
    study_dir.mkdir(parents=True)
    manifest = {"study": {"kind": "measurement"}, "sessions": [{"status": "complete", "runs": listed}]}
    (study_dir / "manifest.json").write_text(json.dumps(manifest))
    return runs, checks, study_dir


def test_the_three_best_rated_models_and_the_best_on_keyword_full(tmp_path: Path) -> None:
    hybrid = {"bge-v2-m3": 2, "gte-base": 1, "jina-v3.5": 4, "qwen3-0.6b": 3, "mxbai-large-v2": 1}
    rated = {
        "bge-v2-m3": True,
        "gte-base": True,
        "jina-v3.5": True,
        "qwen3-0.6b": True,
        "mxbai-large-v2": False,
    }
    runs, checks, st = study(tmp_path, hybrid, {"bge-v2-m3": 1, "jina-v3.5": 2}, rated)
    groups, record = plan_groups(runs, QRELS, checks_dir=checks, study_dir=st)
    # mxbai is best but not rated; gte (rank 1) > bge (2) > qwen (3) > jina (4)
    assert [g.group for g in groups] == [
        "hybrid-71k/gte-base@100",
        "hybrid-71k/bge-v2-m3@100",
        "hybrid-71k/qwen3-0.6b@100",
        "keyword-full/bge-v2-m3@100",
    ]
    assert record["groups_from"][0]["ndcg@10"] == 1.0 and len(record["groups_from"][0]["run_sha256"]) == 64
    assert "mxbai-large-v2" in record["not_rated"]
    assert groups[0].run["q0"][:2] == ["q0#rel", "q0#u0"]


def test_fewer_than_three_rated_models_is_refused(tmp_path: Path) -> None:
    runs, checks, st = study(
        tmp_path,
        {"bge-v2-m3": 1, "gte-base": 2, "jina-v3.5": 3},
        {"bge-v2-m3": 1},
        {"bge-v2-m3": True, "gte-base": True, "jina-v3.5": False},
    )
    with pytest.raises(BenchError, match=r"2 rated model\(s\) with a depth-100 run \(bge-v2-m3, gte-base\)"):
        plan_groups(runs, QRELS, checks_dir=checks, study_dir=st)


def test_runs_from_another_study_directory_are_refused(tmp_path: Path) -> None:
    models = {"bge-v2-m3": 1, "gte-base": 2, "jina-v3.5": 3}
    runs, checks, _ = study(tmp_path / "one", models, {"bge-v2-m3": 1}, dict.fromkeys(models, True))
    _, _, other = study(tmp_path / "two", models, {"bge-v2-m3": 1}, dict.fromkeys(models, True))
    with pytest.raises(BenchError, match="not a run written by the study in"):
        plan_groups(runs, QRELS, checks_dir=checks, study_dir=other)
    with pytest.raises(BenchError, match="no rated model has a depth-100 run"):
        r2, c2, s2 = study(tmp_path / "three", models, {}, dict.fromkeys(models, True))
        plan_groups(r2, QRELS, checks_dir=c2, study_dir=s2)


def test_run_refuses_a_missing_key_and_an_unknown_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    res = CliRunner().invoke(cli, ["judged", "run", "--dir", str(tmp_path / "j")])
    assert res.exit_code == 1 and "ANTHROPIC_API_KEY is not set" in res.output
    res = CliRunner().invoke(cli, ["judged", "run", "--dir", str(tmp_path / "j"), "--model", "claude-x"])
    assert res.exit_code == 1 and "unknown judge model 'claude-x'" in res.output
    assert not (tmp_path / "j").exists()


def test_prepare_command_writes_packet_key_and_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's wiring (preflight, clean tree, queries, texts, selection, files) with the hub-backed
    parts replaced: the study's topics, qrels and corpora cannot be downloaded here."""
    import bench.judged.prepare
    import bench.quality.inputs
    import bench.records.guard
    import bench.records.provenance

    hybrid = {"bge-v2-m3": 2, "gte-base": 1, "qwen3-0.6b": 3}
    runs, checks, st = study(tmp_path, hybrid, {"bge-v2-m3": 1}, dict.fromkeys(hybrid, True))
    qrels_path = tmp_path / "qrels.tsv"
    qrels_path.write_text("".join(f"{q}\t0\t{d}\t{r}\n" for q, j in QRELS.items() for d, r in j.items()))
    calls: list[str] = []
    monkeypatch.setattr("bench.records.codeversion.require_clean_code", lambda root: calls.append("clean"))
    monkeypatch.setattr(
        bench.records.guard, "preflight", lambda kind, **kw: calls.append(kind) or {"kind": kind}
    )
    monkeypatch.setattr(bench.records.provenance, "collect_manifest", lambda **kw: {"kind": kw["kind"]})
    monkeypatch.setattr(
        bench.quality.inputs, "study_queries", lambda: ({q: f"Frage {q}" for q in QUERIES}, qrels_path)
    )
    monkeypatch.setattr(bench.judged.prepare, "passage_texts", lambda ids: {d: f"Text {d}" for d in ids})
    monkeypatch.setattr("bench.judged.cli.repo_root", lambda: tmp_path)
    args = ["judged", "prepare", "--runs", str(runs), "--study", str(st), "--checks", str(checks)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert calls == ["clean", "measurement"]
    out = tmp_path / "studies" / "judged"
    rec = json.loads((out / "prepare.json").read_text())
    assert [g["group"] for g in rec["groups_from"]][:3] == [
        "hybrid-71k/gte-base@100",
        "hybrid-71k/bge-v2-m3@100",
        "hybrid-71k/qwen3-0.6b@100",
    ]
    assert f"{rec['pairs']} pairs" in res.output and rec["key_sha256"] in res.output
    assert rec["provenance"] == {"kind": "judged-prepare"} and rec["preflight"] == {"kind": "measurement"}
    assert "only" in " ".join(rec["notes"])  # 8 queries: every group is short, and says so
    again = CliRunner().invoke(cli, args)  # the same preparation again: a no-op, not an error
    assert again.exit_code == 0 and json.loads((out / "prepare.json").read_text()) == rec


def test_prepare_from_committed_runs_without_the_study_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine with the committed runs/ and results/ and no git-ignored
    studies/quality, ``bench judged prepare`` (defaults) draws from the committed, unchanged runs; a changed
    run is refused naming it. A study manifest written elsewhere (container paths) is matched by stage,
    model, depth and SHA-256, not by its absolute paths."""
    import shutil

    import bench.judged.prepare
    import bench.quality.inputs
    from bench.integrity.hashing import sha256_file
    from tests.conftest import git

    hybrid = {"bge-v2-m3": 2, "gte-base": 1, "qwen3-0.6b": 3}
    root = tmp_path / "clone"
    runs, checks, _ = study(root, hybrid, {"bge-v2-m3": 1}, dict.fromkeys(hybrid, True))
    shutil.move(str(checks), str(root / "results" / "adapter-checks"))
    shutil.rmtree(root / "studies")  # git-ignored: not in a clone
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "quality runs, adapter checks")
    qrels_path = tmp_path / "qrels.tsv"
    qrels_path.write_text("".join(f"{q}\t0\t{d}\t{r}\n" for q, j in QRELS.items() for d, r in j.items()))
    monkeypatch.setattr("bench.records.codeversion.require_clean_code", lambda root: {})
    monkeypatch.setattr("bench.records.guard.preflight", lambda kind, **kw: {"kind": kind})
    monkeypatch.setattr("bench.records.provenance.collect_manifest", lambda **kw: {"kind": kw["kind"]})
    monkeypatch.setattr(
        bench.quality.inputs, "study_queries", lambda: ({q: f"Frage {q}" for q in QUERIES}, qrels_path)
    )
    monkeypatch.setattr(bench.judged.prepare, "passage_texts", lambda ids: {d: f"Text {d}" for d in ids})
    monkeypatch.setattr("bench.judged.cli.repo_root", lambda: root)
    res = CliRunner().invoke(cli, ["judged", "prepare"])
    assert res.exit_code == 0, res.output
    rec = json.loads((root / "studies" / "judged" / "prepare.json").read_text())
    assert rec["runs_checked"] == {"checked_by": "committed runs (git, unchanged)", "study": None}
    assert rec["groups_from"][0]["group"] == "hybrid-71k/gte-base@100"

    changed = runs / "hybrid-71k" / "gte-base@100.trec"
    write_run(changed, _run(4), tag="hybrid-71k/gte-base@100")
    res = CliRunner().invoke(cli, ["judged", "prepare", "--out", str(tmp_path / "j2")])
    assert res.exit_code == 1 and "gte-base@100.trec: changed since its commit" in res.output
    git(root, "checkout", "--", ".")

    listed = [
        {
            "stage": "hybrid-71k",
            "model": m,
            "depth": 100,
            "sha256": sha256_file(runs / "hybrid-71k" / f"{m}@100.trec"),
            "path": f"/work/runs/hybrid-71k/{m}@100.trec",
        }
        for m in hybrid
    ]
    listed.append(
        {
            "stage": "keyword-full",
            "model": "bge-v2-m3",
            "depth": 100,
            "path": "/work/x",
            "sha256": sha256_file(runs / "keyword-full" / "bge-v2-m3@100.trec"),
        }
    )
    container = tmp_path / "container-study"
    container.mkdir()
    (container / "manifest.json").write_text(json.dumps({"study": {}, "sessions": [{"runs": listed}]}))
    res = CliRunner().invoke(
        cli, ["judged", "prepare", "--study", str(container), "--out", str(tmp_path / "j3")]
    )
    assert res.exit_code == 0, res.output
    listed[0]["sha256"] = "0" * 64
    (container / "manifest.json").write_text(json.dumps({"study": {}, "sessions": [{"runs": listed}]}))
    res = CliRunner().invoke(
        cli, ["judged", "prepare", "--study", str(container), "--out", str(tmp_path / "j4")]
    )
    assert res.exit_code == 1 and "differs from the run it recorded" in res.output


def test_models_are_rated_by_their_check_in_the_quality_sessions_setting(tmp_path: Path) -> None:
    """The quality phase ran on the CPU, so every local model's check is ``<model>@cpu-float32.json``
    (none is ``<model>.json``): judged prepare rates the models as the quality phase did, by the check in the
    setting of the quality study that wrote the runs. Before the fix it read ``<model>.json`` only and found
    only the two Voyage models rated (found by tests/runbook, step judged)."""
    from bench.equality.results import quality_setting

    models = {"bge-v2-m3": 2, "gte-base": 1, "qwen3-0.6b": 3}
    runs, checks, st = study(tmp_path, models, {"bge-v2-m3": 1}, {})
    for m in models:
        cpu = {"device": "cpu", "dtype": "float32"}
        write_result(m, {"model": m, "rated": True, "reason": "test", **cpu}, checks)
    assert sorted(p.name for p in checks.iterdir()) == [f"{m}@cpu-float32.json" for m in sorted(models)]
    manifest = json.loads((st / "manifest.json").read_text())
    manifest["study"]["params"] = {"device": "cpu", "dtype": None}
    (st / "manifest.json").write_text(json.dumps(manifest))
    setting = quality_setting(tmp_path, st)
    assert setting == ("cpu", None)
    groups, _ = plan_groups(runs, QRELS, checks_dir=checks, study_dir=st, setting=setting)
    assert [g.group for g in groups] == [
        "hybrid-71k/gte-base@100",
        "hybrid-71k/bge-v2-m3@100",
        "hybrid-71k/qwen3-0.6b@100",
        "keyword-full/bge-v2-m3@100",
    ]
    # a CUDA quality study (the default, no study on this machine) is never rated by a CPU check
    with pytest.raises(BenchError, match="passed on device cpu, dtype float32"):
        plan_groups(runs, QRELS, checks_dir=checks, study_dir=st, setting=quality_setting(tmp_path / "none"))
