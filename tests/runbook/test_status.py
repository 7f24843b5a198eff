"""`bench status` on hand-made partial states: which stages, models, depths and sessions
are missing, and the exact next command from docs/runbook.md."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.core import plan
from bench.core.errors import BenchError
from bench.core.runbook import parse_runbook, read_runbook
from bench.status.command import CHECKERS, status, status_report
from tests.conftest import REPO_ROOT


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "docs").mkdir()
    shutil.copy2(REPO_ROOT / "docs" / "runbook.md", tmp_path / "docs" / "runbook.md")
    shutil.copy2(REPO_ROOT / "DEVIATIONS.md", tmp_path / "DEVIATIONS.md")
    monkeypatch.setenv("BENCH_ROOT", str(tmp_path))
    monkeypatch.delenv("BENCH_MODELS_DIR", raising=False)
    monkeypatch.delenv("BENCH_HUB_DIR", raising=False)
    return tmp_path


def touch(path: Path, text: str = "x\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def phase(report: dict, pid: str) -> dict:
    return next(p for p in report["phases"] if p["id"] == pid)


def rated(root: Path, *, not_rated: tuple[str, ...] = ()) -> None:
    for m in plan.RERANKERS:
        touch(
            root / "results" / "adapter-checks" / f"{m}.json",
            json.dumps({"model": m, "rated": m not in not_rated, "reason": "test"}),
        )


def test_runbook_steps_are_the_status_phases() -> None:
    steps = read_runbook(REPO_ROOT)
    assert [s.id for s in steps] == list(CHECKERS)  # same phases, same order
    for s in steps:
        for c in s.commands:
            assert c.startswith(
                ("docker compose ", "git ", "${EDITOR:-vi} ", "printf ", "docker/pin-digests.sh ")
            ), f"step {s.id}: {c!r} is not a container or git command"


def test_quality_one_model_missing_at_one_depth(root: Path) -> None:
    rated(root, not_rated=("querit-4b",))
    for m in plan.RERANKERS:
        for s in plan.RERANKED_STAGES:
            for k in plan.DEPTHS:
                if (m, s, k) != ("qwen3-4b", "hybrid-71k", 50) and m != "querit-4b":
                    touch(root / "runs" / s / f"{m}@{k}.trec")
    q = phase(status_report(root, "gpu-desktop"), "quality")
    assert q["state"] == "partial"
    assert q["missing"] == ["qwen3-4b: hybrid-71k@50"]  # querit-4b is not rated: not expected
    assert q["notes"] == ["querit-4b: not rated, not run"]
    assert q["next"] == "docker compose run --rm bench quality"
    touch(root / "runs" / "hybrid-71k" / "qwen3-4b@50.trec")
    assert phase(status_report(root, "gpu-desktop"), "quality")["state"] == "done"


def test_first_stage_missing_names_the_stage_and_its_command(root: Path) -> None:
    for s in plan.STAGES:
        if s != "keyword-full":
            touch(root / "runs" / "first-stage" / f"{s}.trec")
            touch(root / "results" / "first-stage" / f"{s}.json", "{}")
    touch(root / "runs" / "first-stage" / "keyword-full.trec")  # the record was never written
    rep = status_report(root, "gpu-desktop")
    fs = phase(rep, "first-stages")
    assert fs["state"] == "partial"
    assert fs["missing"] == ["keyword-full (results/first-stage/keyword-full.json)"]
    assert fs["next"] == "docker compose run --rm bench first-stage keyword-full"


def _api_block(root: Path, session: str, model: str, k: int, opt_out: str = "no") -> None:
    touch(
        root / "results" / "latency" / "published" / "api" / session / model / f"k{k}-pass1.json",
        json.dumps({"api": {"training_opt_out": opt_out}}),
    )


def test_api_session_missing_and_unfinished(root: Path) -> None:
    for s in ("20261202T0800Z-morning-utc", "20261202T1300Z-afternoon-utc"):
        for m in plan.API_RERANKERS:
            for k in plan.API_DEPTHS:
                _api_block(root, s, m, k)
    api = phase(status_report(root, "gpu-desktop"), "latency-api")
    assert api["state"] == "partial"
    assert api["missing"] == [
        "1 more session(s) of 3 (sessions so far: 20261202T0800Z-morning-utc, 20261202T1300Z-afternoon-utc)"
    ]
    assert api["next"] == (
        "docker compose run --rm bench-cpu latency api --training-opt-out yes --time-of-day evening-utc"
    )
    _api_block(root, "20261202T1900Z-evening-utc", plan.API_RERANKERS[0], plan.API_DEPTHS[0])
    api = phase(status_report(root, "gpu-desktop"), "latency-api")
    assert api["state"] == "partial"
    assert plan.API_RERANKERS == ("voyage-rerank-3", "voyage-rerank-3-lite") and plan.API_DEPTHS == (20, 100)
    assert api["missing"] == [
        "session 20261202T1900Z-evening-utc: voyage-rerank-3: k100-pass1",
        "session 20261202T1900Z-evening-utc: voyage-rerank-3-lite: k20-pass1, k100-pass1",
    ]
    # the resume names the session and the opt-out its blocks record, not the runbook's "yes"
    assert api["next"] == (
        "docker compose run --rm bench-cpu latency api --training-opt-out no "
        "--session 20261202T1900Z-evening-utc"
    )


def test_gpu_latency_one_block_missing(root: Path) -> None:
    for m in plan.LOCAL_RERANKERS:
        for k in plan.GPU_DEPTHS:
            for p in range(1, plan.GPU_PASSES + 1):
                if (m, k, p) != ("jina-v3.5", 50, 3):
                    touch(root / "results/latency/published/gpu/rtx-5070-ti" / m / f"k{k}-pass{p}.json", "{}")
    touch(
        root / "results/latency/published/gpu/rtx-5070-ti/jina-v3.5/.k50-pass3.json.tmp", "{}"
    )  # unfinished
    g = phase(status_report(root, "gpu-desktop"), "latency-gpu")
    assert g["state"] == "partial" and g["missing"] == ["jina-v3.5: k50-pass3"]
    assert g["next"] == "docker compose run --rm bench latency gpu"


def test_prepare_needs_uid_and_gid_in_dotenv(root: Path) -> None:
    p = phase(status_report(root, "gpu-desktop"), "prepare")
    assert p["state"] == "not started" and p["next"].startswith("printf 'UID=%s")
    touch(root / ".env", "VOYAGE_API_KEY=x\nUID=1000\n")
    p = phase(status_report(root, "gpu-desktop"), "prepare")
    assert p["state"] == "partial" and p["missing"] == [".env has no GID= line (this machine)"]
    touch(root / ".env", "UID=1000\nexport GID=1000\n")
    assert phase(status_report(root, "gpu-desktop"), "prepare")["state"] == "done"


def test_next_command_for_this_machine(root: Path) -> None:
    touch(root / ".env", "UID=1000\nGID=1000\n")  # step 0 done on this machine
    touch(root / "PLAN.md.ots")
    touch(root / "timestamps" / "DEVIATIONS.md" / "abc.ots")
    rep = status_report(root, "cpu-server")
    assert rep["next"]["step"] == "data"  # the runbook's next step (a machine with internet)
    assert rep["next_here"]["step"] == "data"
    rep = status_report(root, "gpu-desktop")
    assert phase(rep, "stamp")["state"] == "done"


def test_check_in_another_setting_counts(root: Path) -> None:
    touch(
        root / "results" / "adapter-checks" / "bge-v2-m3@cpu-float32.json",
        json.dumps({"model": "bge-v2-m3", "rated": True, "reason": "test"}),
    )
    missing = phase(status_report(root, "gpu-desktop"), "check-adapters")["missing"]
    assert "bge-v2-m3 (results/adapter-checks/bge-v2-m3.json)" not in missing and len(missing) == 8


def test_cli_json_and_text(root: Path) -> None:
    rated(root)
    out = CliRunner().invoke(status, ["--json", "--machine", "gpu-desktop"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert phase(data, "check-adapters")["state"] == "done"
    text = CliRunner().invoke(status, ["--machine", "any"]).output
    assert "check-adapters   gpu-desktop  done" in text
    assert (
        text.splitlines()[-1]
        == "next on this machine (any): docker compose run --rm bench-cpu timestamps stamp PLAN.md"
    )


def test_status_imports_nothing_heavy(root: Path) -> None:
    code = (
        "import sys\nfrom bench.cli import cli\n"
        "cli(['status', '--json'], prog_name='bench', standalone_mode=False)\n"
        "print(sorted(m for m in ('torch', 'numpy', 'pyarrow', 'transformers') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_runbook_parse_errors() -> None:
    with pytest.raises(BenchError, match=r"x.md:3: continuation lines"):
        parse_runbook("```sh\n# step: a · machine: any\ngit add \\\n```\n", "x.md")
    with pytest.raises(BenchError, match=r"x.md:1: a ```sh block is not closed"):
        parse_runbook("```sh\n# step: a · machine: any\n", "x.md")
    with pytest.raises(BenchError, match=r"machine 'laptop'"):
        parse_runbook("```sh\n# step: a · machine: laptop\ngit status\n```\n", "x.md")
    steps = parse_runbook(
        "\ufeffx\r\n```sh\r\n# step: a · machine: any\r\ngit status\r\n\r\n# a comment\r\n```\r\n"
    )
    assert [(s.id, s.commands, s.line) for s in steps] == [("a", ("git status",), 3)]
