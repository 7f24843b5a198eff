"""The measurement guard (lock verified, plan stamped; rehearsal exempt) and the provenance manifest."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.integrity import lockops
from bench.records.codeversion import CODE_PATHS, require_clean_code
from bench.records.guard import preflight
from bench.records.provenance import collect_manifest, sha256_file

from .conftest import PLAN_TEXT

STOP = "data/bundled/snowball-german-stop/stop.txt"
Factory = Callable[..., tuple[bytes, bytes | None]]


@pytest.fixture
def guarded(study_repo: Path, repo_root: Path) -> Path:
    """The study checkout plus one bundled file and its lock entry (sources note copied)."""
    for rel in (STOP, "data/bundled/SOURCES.md"):
        (study_repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(repo_root / rel, study_repo / rel)
    lockops.lock(study_repo, ["bundled"])
    return study_repo


def test_measurement_refuses_without_plan_stamp(guarded: Path) -> None:
    with pytest.raises(BenchError, match=r"PLAN\.md\.ots does not exist"):
        preflight("measurement", lock_names=["bundled"], root=guarded)


def test_measurement_refuses_a_proof_of_another_file(guarded: Path, proof_factory: Factory) -> None:
    (guarded / "PLAN.md.ots").write_bytes(proof_factory(b"not the plan")[0])
    with pytest.raises(BenchError, match=r"does not prove PLAN\.md \(wrong digest"):
        preflight("measurement", lock_names=["bundled"], root=guarded)
    (guarded / "PLAN.md.ots").write_bytes(b"garbage")
    with pytest.raises(BenchError, match="corrupt"):
        preflight("measurement", lock_names=["bundled"], root=guarded)


def test_measurement_passes_with_stamp_and_lock(guarded: Path, proof_factory: Factory) -> None:
    (guarded / "PLAN.md.ots").write_bytes(proof_factory(PLAN_TEXT.encode())[0])
    record = preflight("measurement", lock_names=["bundled"], root=guarded)
    assert record["kind"] == "measurement"
    assert record["plan_stamp"]["verdict"] == "pending"
    assert record["plan_stamp"]["plan_sha256"] == hashlib.sha256(PLAN_TEXT.encode()).hexdigest()
    assert record["verified_entries"] == {STOP: sha256_file(guarded / STOP)}
    lock_sha = hashlib.sha256((guarded / "datasets.lock").read_bytes()).hexdigest()
    assert record["datasets_lock_sha256"] == lock_sha
    json.dumps(record)


def test_rehearsal_is_exempt_and_says_so(guarded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = preflight("rehearsal", lock_names=["bundled"], root=guarded)
    err = capsys.readouterr().err
    assert "rehearsal: exempt from the plan-stamp requirement" in err
    assert record["plan_stamp"]["exempt"] == "rehearsal" and record["plan_stamp"]["verdict"] == "not stamped"


def test_lock_failures_stop_every_kind(guarded: Path, proof_factory: Factory) -> None:
    (guarded / "PLAN.md.ots").write_bytes(proof_factory(PLAN_TEXT.encode())[0])
    (guarded / STOP).write_bytes(b"changed")
    for kind in ("measurement", "rehearsal"):
        with pytest.raises(BenchError, match="wrong size"):
            preflight(kind, lock_names=["bundled"], root=guarded)  # type: ignore[arg-type]
    with pytest.raises(BenchError, match="unknown dataset or entry name"):
        preflight("rehearsal", lock_names=["nope"], root=guarded)
    with pytest.raises(ValueError, match="kind must be"):
        preflight("measure", lock_names=["bundled"], root=guarded)  # type: ignore[arg-type]


def test_repository_rehearsal_preflight(repo_root: Path) -> None:
    record = preflight("rehearsal", lock_names=["bundled"], root=repo_root)
    assert len(record["verified_entries"]) == 8


def test_manifest_fields(guarded: Path) -> None:
    m = collect_manifest(
        kind="test", device="cpu", dtype="float32", server_version="0.24.1", extra={"seed": 1}, root=guarded
    )
    json.dumps(m)
    assert m["plan_sha256"] == hashlib.sha256(PLAN_TEXT.encode()).hexdigest()
    assert m["deviations_sha256"] == sha256_file(guarded / "DEVIATIONS.md")
    assert m["datasets_lock_sha256"] == sha256_file(guarded / "datasets.lock")
    assert m["git"]["commit"] is not None and len(m["git"]["commit"]) == 40
    assert m["git"]["dirty"] is True  # the copied data and the lock are untracked
    assert (m["device"], m["dtype"], m["server_version"], m["extra"]) == (
        "cpu",
        "float32",
        "0.24.1",
        {"seed": 1},
    )
    assert m["timestamp"]["verdict"] == "not stamped"
    assert set(m["host"]) >= {"hostname", "platform", "cpu_model", "lscpu", "nvidia_smi", "torch_threads"}
    assert m["packages"]["numpy"] is not None
    assert m["utc"].endswith("+00:00")


def test_manifest_outside_git(tmp_path: Path) -> None:
    m = collect_manifest(kind="test", root=tmp_path)
    assert m["git"] == {
        "commit": None,
        "dirty": None,
        "dirty_paths": None,
        "code_digest": None,
        "code_paths": list(CODE_PATHS),
        "code_dirty_paths": None,
    }
    assert m["plan_sha256"] is None and m["timestamp"] == {}


def test_require_clean_code(study_repo: Path, tmp_path: Path) -> None:
    """Only uncommitted changes under the code paths refuse; outputs, DEVIATIONS.md and PLAN.md edits do not
    count here (PLAN.md has its own checks: the stamp and the study's plan hash)."""
    record = require_clean_code(study_repo)
    assert record["code_dirty_paths"] == [] and len(record["code_digest"]) == 64
    for rel in ("new.txt", "results/x.json", "runs/a/b.trec", "timestamps/x.ots"):
        (study_repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (study_repo / rel).write_text("x")
    (study_repo / "DEVIATIONS.md").write_text("edited")
    assert require_clean_code(study_repo)["code_digest"] == record["code_digest"]
    (study_repo / "bench").mkdir()
    (study_repo / "bench" / "new.py").write_text("x = 1\n")
    with pytest.raises(BenchError, match=r"the code has uncommitted changes \(bench/new\.py\)"):
        require_clean_code(study_repo)
    empty = tmp_path / "nogit"
    empty.mkdir()
    with pytest.raises(BenchError, match="not a git checkout"):
        require_clean_code(empty)
