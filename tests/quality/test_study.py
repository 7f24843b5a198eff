"""Study directory: creation, resume, and the refusals (other plan, other parameters, other code)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.core.errors import BenchError
from bench.quality.study import Study, read_manifest

PARAMS = {"stages": ["s1"], "models": ["m"], "depths": [20, 50, 100]}


def _plan(tmp: Path, text: str = "# plan\n") -> Path:
    p = tmp / "PLAN.md"
    p.write_text(text)
    return p


def _start(
    d: Path,
    plan: Path,
    *,
    kind: str = "measurement",
    params: dict = PARAMS,
    commit: str = "a" * 40,
    resume_only: bool = False,
) -> Study:
    return Study.start(
        d,
        kind=kind,
        plan_path=plan,
        params=params,
        provenance={"git": {"commit": commit}},
        preflight={"kind": kind},
        resume_only=resume_only,
    )


def test_create_and_resume_appends_sessions(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    s = _start(tmp_path / "st", plan)
    s.end("interrupted")
    s2 = _start(tmp_path / "st", plan)
    s2.end("complete", scored=3)
    m = read_manifest(tmp_path / "st")
    assert [x["status"] for x in m["sessions"]] == ["interrupted", "complete"]
    assert m["study"]["params"] == PARAMS and "tie_rule" in m["study"] and "depth_rule" in m["study"]
    assert len(m["study"]["plan_sha256"]) == 64


def test_other_plan_version_refused(tmp_path: Path) -> None:
    _start(tmp_path / "st", _plan(tmp_path)).end("interrupted")
    with pytest.raises(BenchError, match=r"another version of PLAN\.md .* refusing to resume"):
        _start(tmp_path / "st", _plan(tmp_path, "# plan v2\n"))


def test_other_parameters_refused(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    _start(tmp_path / "st", plan)
    with pytest.raises(BenchError, match=r"different parameters \(models\)"):
        _start(tmp_path / "st", plan, params={**PARAMS, "models": ["m", "n"]})


def test_measurement_from_other_commit_refused_rehearsal_not(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    _start(tmp_path / "st", plan)
    with pytest.raises(BenchError, match="one version of the code"):
        _start(tmp_path / "st", plan, commit="b" * 40)
    _start(tmp_path / "r", plan, kind="rehearsal")
    _start(tmp_path / "r", plan, kind="rehearsal", commit="b" * 40)


def test_kind_mismatch_and_resume_only(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    _start(tmp_path / "st", plan)
    with pytest.raises(BenchError, match="cannot be resumed as a rehearsal"):
        _start(tmp_path / "st", plan, kind="rehearsal")
    with pytest.raises(BenchError, match="nothing to resume"):
        _start(tmp_path / "none", plan, resume_only=True)


def test_damaged_manifest_is_named(tmp_path: Path) -> None:
    d = tmp_path / "st"
    d.mkdir()
    (d / "manifest.json").write_text("{not json")
    with pytest.raises(BenchError, match=r"manifest\.json: not valid JSON"):
        read_manifest(d)


def test_quality_refuses_uncommitted_code(tmp_path: Path) -> None:
    from bench.cli import cli

    root = tmp_path / "repo"
    root.mkdir()
    git = ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (root / "PLAN.md").write_text("# plan\n")
    subprocess.run([*git, "add", "PLAN.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "plan"], check=True)
    (root / "bench").mkdir()
    (root / "bench" / "scratch.py").write_text("x = 1\n")
    result = CliRunner().invoke(
        cli, ["quality", "--model", "bge-v2-m3", "--stage", "hybrid-71k"], env={"BENCH_ROOT": str(root)}
    )
    assert result.exit_code == 1
    assert "the code has uncommitted changes" in result.output and "bench/scratch.py" in result.output
    assert not (root / "studies").exists()
    assert json.dumps({})  # nothing else was written


def test_running_session_of_a_live_process_is_not_marked_killed(tmp_path: Path) -> None:
    """Only a session whose process is gone is marked killed; this process's own earlier session (or a live
    other one) is not a crash: here the study is started twice in one process, the first left running."""
    import os

    from bench.quality.study import KILLED, mark_killed_sessions

    plan = _plan(tmp_path)
    _start(tmp_path / "st", plan)  # left "running"
    m = read_manifest(tmp_path / "st")
    m["sessions"][0]["pid"] = os.getppid()  # a live process on this host (the test runner's parent)
    assert mark_killed_sessions(m) == [] and m["sessions"][0]["status"] == "running"
    m["sessions"][0]["pid"] = 2**22 + 12345  # beyond pid_max: no such process
    assert mark_killed_sessions(m) == [0] and m["sessions"][0]["status"] == KILLED


def test_corrupt_candidates_json_names_the_file_and_the_recovery(tmp_path: Path) -> None:
    from bench.quality.candidates import CANDIDATES_JSON, freeze

    src = tmp_path / "s1.trec"
    src.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n", encoding="utf-8")
    study = tmp_path / "study"
    assert freeze(study, {"s1": src}).lists["s1"]["q1"] == ("d1", "d2")
    record = study / CANDIDATES_JSON
    for damage in (record.read_bytes()[:25], b'{"depth": 100}', b"\xff\xfe"):
        record.write_bytes(damage)
        with pytest.raises(BenchError) as err:
            freeze(study, {"s1": src})
        assert str(record) in err.value.message
        assert "start a new study directory" in err.value.message and "Restore it" in err.value.message
