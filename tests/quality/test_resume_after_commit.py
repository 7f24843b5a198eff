"""The real scenario: in a temporary git repository laid out as the project (default
paths: runs/, results/adapter-checks, studies/quality), ``bench quality`` ends with a model "not run"; the
finished run files (uncommitted, then committed) do not block the resume, which scores the model; a resume
after a change under bench/ is refused naming the path. Before the fix, the uncommitted run files refused
("uncommitted changes") and, once committed, the new commit refused ("one version of the code").

Only the lock/stamp preflight and the hub-backed query and text loaders are replaced (their own tests
cover them); the clean-code check and the manifest (git commit, code digest) are the real ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.core.paths import repo_root
from bench.equality.results import scoring_setting, write_result
from tests.conftest import git
from tests.quality.fakes import make_inputs
from tests.quality.test_quality_api_and_local import KEY, voyage  # noqa: F401 (fixture)
from tests.support.voyage_api import FakeVoyage

MODELS = ("bge-v2-m3", "voyage-rerank-3")
API = {"device": "api", "dtype": "api"}  # the setting an API model's check records


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, voyage: FakeVoyage) -> Path:  # noqa: F811
    from tests.support.tiny_models import tiny_models_root

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for rel in ("PLAN.md", "pyproject.toml", ".gitignore", "bench/records/codeversion.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(repo_root() / rel, root / rel)
    tiny_models_root(tmp_path / "models", ("bge-v2-m3",))
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("BENCH_ROOT", str(root))
    monkeypatch.setenv("VOYAGE_API_KEY", KEY)
    monkeypatch.setenv("VOYAGE_BASE_URL", voyage.url)
    _, queries, texts = make_inputs(root / "runs", n_queries=3, stages=("hybrid-71k",))
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("".join(f"{q}\t0\t1#0\t1\n" for q in queries), encoding="utf-8")
    checks = root / "results" / "adapter-checks"
    write_result(
        "bge-v2-m3",
        {"model": "bge-v2-m3", "rated": True, "reason": "test", **scoring_setting("bge-v2-m3", "cpu")},
        checks,
    )
    write_result(
        "voyage-rerank-3",
        {"model": "voyage-rerank-3", "rated": True, "reason": "test", "pointwise": True, **API},
        checks,
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "code, first stage, adapter checks")
    monkeypatch.setattr("bench.quality.cli.repo_root", lambda: root)
    monkeypatch.setattr("bench.records.guard.preflight", lambda kind, **kw: {"kind": kind})
    monkeypatch.setattr("bench.quality.inputs.study_queries", lambda: (queries, qrels))
    monkeypatch.setattr("bench.quality.inputs.candidate_texts", lambda candidates: texts)
    return root


def _quality() -> Any:
    from bench.quality.cli import quality

    args = ["--stage", "hybrid-71k", "--device", "cpu"]
    for m in MODELS:
        args += ["--model", m]
    return CliRunner().invoke(quality, args)


def _sessions(root: Path) -> list[dict[str, Any]]:
    manifest = json.loads((root / "studies" / "quality" / "manifest.json").read_text(encoding="utf-8"))
    return list(manifest["sessions"])


def test_not_run_then_commit_the_run_files_then_resume(
    project: Path,
    voyage: FakeVoyage,  # noqa: F811
) -> None:
    root = project
    voyage.key = "pa-another-key"  # the server no longer takes ours
    res = _quality()
    assert res.exit_code == 1 and "not run: voyage-rerank-3" in res.output
    written = {p.name for p in (root / "runs" / "hybrid-71k").glob("*.trec")}
    assert written == {f"bge-v2-m3@{k}.trec" for k in (20, 50, 100)}
    assert "runs/hybrid-71k/bge-v2-m3@100.trec" in git(root, "status", "--porcelain", "-uall")

    res = _quality()  # the run files are uncommitted: not refused (the key is still wrong)
    assert res.exit_code == 1 and "not run: voyage-rerank-3" in res.output, res.output
    assert "uncommitted" not in res.output and len(_sessions(root)) == 2

    git(root, "add", "runs")
    git(root, "commit", "-q", "-m", "quality: finished run files")
    voyage.key = KEY  # the cause is fixed
    res = _quality()
    assert res.exit_code == 0, res.output
    assert len(list((root / "runs" / "hybrid-71k").glob("voyage-rerank-3@*.trec"))) == 3
    sessions = _sessions(root)
    commits = [s["provenance"]["git"]["commit"] for s in sessions]
    digests = {s["provenance"]["git"]["code_digest"] for s in sessions}
    assert commits[0] == commits[1] != commits[2] and len(digests) == 1
    assert sessions[2]["provenance"]["git"]["dirty"] is False  # nothing else uncommitted now

    (root / "bench" / "records" / "codeversion.py").write_text("# changed\n", encoding="utf-8")
    res = _quality()  # an uncommitted code change: refused before anything is written
    assert (
        res.exit_code == 1 and "the code has uncommitted changes (bench/records/codeversion.py)" in res.output
    )
    git(root, "commit", "-q", "-am", "change the code")
    res = _quality()  # committed: the study's code differs, refused naming the path
    assert res.exit_code == 1, res.output
    assert f"these code paths differ from commit {commits[0]}: bench/records/codeversion.py" in res.output
    assert len(_sessions(root)) == 3
