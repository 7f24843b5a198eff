"""Bad input to `bench rehearse`: a clear message, a non-zero exit, nothing half-written."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core.paths import repo_root
from bench.quality.study import Study
from bench.rehearse.run import Options
from tests.support.rehearsal import write_mini_beir


def _invoke(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["rehearse", *args], env=env)
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes is not None else "")


def test_dataset_without_qrels(tmp_path: Path) -> None:
    ds = write_mini_beir(tmp_path / "ds", qrels=False)
    code, out = _invoke(["--dataset", str(ds), "--out", str(tmp_path / "out")])
    assert code == 1
    assert "missing qrels/test.tsv" in out and "qrels (relevance judgments)" in out
    assert not (tmp_path / "out").exists()


def _copy_root(tmp: Path) -> Path:
    src = repo_root()
    root = tmp / "root"
    (root / "data").mkdir(parents=True)
    shutil.copytree(src / "data" / "bundled", root / "data" / "bundled")
    for name in ("PLAN.md", "DEVIATIONS.md", "datasets.lock"):
        shutil.copy(src / name, root / name)
    return root


@pytest.mark.parametrize("damage", ["corrupt", "missing"])
def test_corrupt_or_missing_bundled_file_is_named(tmp_path: Path, damage: str) -> None:
    root = _copy_root(tmp_path)
    target = root / "data" / "bundled" / "miracl-de-dev" / "qrels.miracl-v1.0-de-dev.tsv"
    if damage == "corrupt":
        data = bytearray(target.read_bytes())
        data[10] ^= 1
        target.write_bytes(bytes(data))
    else:
        target.unlink()
    code, out = _invoke(["--out", str(tmp_path / "out")], env={"BENCH_ROOT": str(root)})
    assert code == 1
    assert "qrels.miracl-v1.0-de-dev.tsv" in out
    assert not (tmp_path / "out").exists()


def test_occupied_port(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code, out = _invoke(["--port", str(port), "--out", str(tmp_path / "out")])
    assert code == 1
    assert f"port {port}" in out and "already in use" in out
    assert not (tmp_path / "out").exists()


def test_rehearsal_from_another_plan_version_refuses_to_resume(tmp_path: Path) -> None:
    other_plan = tmp_path / "PLAN.md"
    other_plan.write_text("# another plan\n")
    d = tmp_path / "old"
    study = Study.start(
        d, kind="rehearsal", plan_path=other_plan, params=Options().params(), provenance={}, preflight=None
    )
    study.end("interrupted")
    code, out = _invoke(["--resume", str(d)])
    assert code == 1
    assert "another version of PLAN.md" in out and "refusing to resume" in out


def test_resume_of_a_non_rehearsal_dir(tmp_path: Path) -> None:
    code, out = _invoke(["--resume", str(tmp_path)])
    assert code == 1 and "not a rehearsal directory" in out


def test_resume_with_other_options_is_a_usage_error(tmp_path: Path) -> None:
    code, out = _invoke(["--resume", str(tmp_path), "--max-queries", "3"])
    assert code == 2 and "recorded settings" in out
