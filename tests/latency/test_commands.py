"""bench latency gpu|cpu: every refusal is one line, exits non-zero and writes nothing; the int8 model is
refused by name until the registry provides it; first-stage records become blocks; the report section."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis.latency import per_query_ns, per_query_server_ms, read_blocks
from analysis.latency.report import latency_section
from bench.cli import cli
from bench.core.errors import BenchError
from bench.latency.callers import RerankerCaller
from bench.latency.firststage import convert
from bench.latency.harness import run_block
from bench.latency.presets import INT8_ID, PRESETS, availability
from bench.latency.timer import WallTimer
from tests.latency.fakes import env, ordered_fake, spec


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gpu", "--models", "bge-v3"], "unknown model id 'bge-v3' for bench latency gpu"),
        (["cpu", "--published", "--k", "50"], "k = 50 is not a depth of the plan's cpu latency preset"),
        (["cpu"], "--published (CPU server) or --pre-measurement (desktop)"),
        (["gpu"], "CUDA requested (bench latency gpu) but torch.cuda.is_available() is False"),
        (["cpu", "--published", "--models", "gte-base"], "gte-base has no passed adapter check"),
        (["gpu", "--machine", "a/b"], "must match [A-Za-z0-9._-]+"),
    ],
)
def test_bad_input_is_one_line_nonzero_and_writes_nothing(
    tmp_path: Path, args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.latency import timer
    from tests.latency.test_timer_telemetry import FakeCuda

    # no torch import here: the real timer_for, handed a torch.cuda stand-in without a device
    monkeypatch.setattr("bench.latency.commands.timer_for", lambda d: timer.timer_for(d, FakeCuda(False)))
    out = tmp_path / "latency"
    r = CliRunner().invoke(cli, ["latency", *args, "--out", str(out), "--checks", str(tmp_path / "c")])
    assert r.exit_code != 0 and message in r.output, r.output
    assert not out.exists()


def test_int8_is_refused_by_name_until_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    assert INT8_ID in PRESETS["cpu"].models and INT8_ID == "bge-v2-m3-int8"
    monkeypatch.setattr("bench.rerankers.registry._REGISTRY", {})
    reason = availability(INT8_ID)
    assert reason is not None and reason.startswith("bge-v2-m3-int8 refused: the reranker registry has no")
    monkeypatch.setattr("bench.rerankers.registry._REGISTRY", {INT8_ID: lambda m, o: ordered_fake()})
    assert availability(INT8_ID) is None  # measurable by merely existing


def test_qwen3_4b_rule_and_cpu_preset_numbers() -> None:
    cpu = PRESETS["cpu"]
    assert cpu.sample == 100 and cpu.sample_seed == 20261009 and cpu.depths == (20, 100) and cpu.passes == 1
    rule = cpu.rule("qwen3-4b")
    assert (rule.queries, rule.depths, rule.warmup) == (5, (20,), 1)
    assert not PRESETS["cpu-pre"].published and PRESETS["gpu"].passes == 3


def test_first_stage_records_become_blocks(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    lat = {
        "warmup_queries_discarded": 1,
        "per_query_ids": ["q1", "q2", "q3"],
        "per_query_client_ms": [1.5, 2.25, 3.0],
        "per_query_server_ms": [1.0, 2.0, 2.0],
    }
    (records / "vector-71k.json").write_text(
        json.dumps({"stage": "vector-71k", "mode": "rehearsal", "latency": lat})
    )
    out = tmp_path / "latency"
    with pytest.raises(BenchError, match="is not a measurement; it cannot be published"):
        convert(records, out, machine="box", session="box", published=True, manifest={})
    ((block, new),) = convert(records, out, machine="box", session="box", published=False, manifest={})
    assert new and block.target == "vector-71k" and block.k == 100 and block.warmup_query_ids == ("q1",)
    (back,) = read_blocks(out)
    assert per_query_ns(back) == {"q1": 1_500_000, "q2": 2_250_000, "q3": 3_000_000}
    assert per_query_server_ms(back) == {"q1": 1.0, "q2": 2.0, "q3": 2.0}
    del lat["per_query_ids"]
    (records / "hybrid-71k.json").write_text(json.dumps({"stage": "hybrid-71k", "mode": "x", "latency": lat}))
    with pytest.raises(BenchError, match="no per_query_ids"):
        convert(
            records, out, machine="box", session="box", published=False, manifest={}, stages=("hybrid-71k",)
        )


def test_report_section_keeps_published_and_not_published_apart(tmp_path: Path) -> None:
    from dataclasses import replace

    root = tmp_path / "latency"
    run_block(spec(), RerankerCaller(ordered_fake(), WallTimer()), env(root))
    run_block(
        replace(spec(), published=True, session="server"),
        RerankerCaller(ordered_fake(), WallTimer()),
        env(root),
    )
    md = latency_section(root, tmp_path / "out", figures=True)
    text = "\n".join(md)
    pub, unpub = text.index("### Published"), text.index("### NOT PUBLISHED")
    assert pub < text.index("#### cpu: server") < unpub < text.index("#### cpu: testbox")
    assert (tmp_path / "out/figures/latency-published-cpu-server.png").is_file()
    first = json.loads((tmp_path / "out/latency-summary/not-published-cpu-testbox.json").read_text())
    again = latency_section(root, tmp_path / "out2", figures=False)
    assert json.loads((tmp_path / "out2/latency-summary/not-published-cpu-testbox.json").read_text()) == first
    assert again[0] == "## Latency" and first["rows"][0]["n"] == 6


def test_clean_code_rule_ignores_outputs_of_every_phase(tmp_path: Path) -> None:
    """Finished blocks and any other phase's outputs under results/ and runs/ (committed or not) never refuse
    a latency session; an uncommitted change under bench/ does, naming the file."""
    import subprocess

    from bench.latency import commands
    from tests.conftest import GIT_ENV

    def git(*args: str) -> None:
        subprocess.run(
            ["git", *args], cwd=tmp_path, check=True, capture_output=True, env={**os.environ, **GIT_ENV}
        )

    git("init", "-q")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "a.py").write_text("a = 1\n")
    git("add", "bench/a.py")
    git("commit", "-qm", "x")
    block = tmp_path / "results/latency/published/cpu/m/bge-v2-m3/k20-pass1.json"
    block.parent.mkdir(parents=True)
    block.write_text("{}")
    (tmp_path / "results/other.json").write_text("{}")
    (tmp_path / "runs/hybrid-71k").mkdir(parents=True)
    (tmp_path / "runs/hybrid-71k/bge-v2-m3@100.trec").write_text("")
    commands.require_clean_code(tmp_path)  # outputs: fine
    (tmp_path / "bench" / "a.py").write_text("a = 2\n")
    with pytest.raises(BenchError, match=r"the code has uncommitted changes \(bench/a\.py\)"):
        commands.require_clean_code(tmp_path)


def test_remaining_blocks_are_measured_by_the_code_of_the_finished_ones(
    tmp_git_repo: Callable[..., Path],
) -> None:
    """The rule of bench.records.codeversion for latency: finished blocks of one machine were measured by
    one version of the code; a resume after a commit of the finished blocks (same code) continues, a resume
    after a code change is refused naming the path."""
    from bench.latency.commands import require_same_code_as_blocks
    from bench.records.codeversion import code_digest
    from tests.conftest import git

    root = tmp_git_repo([{"bench/a.py": "a = 1\n"}])
    first = git(root, "rev-parse", "HEAD").strip()
    block = root / "results/latency/published/cpu/ccx33/bge-v2-m3/k20-pass1.json"
    block.parent.mkdir(parents=True)
    block.write_text(json.dumps({"manifest": {"git": {"commit": first, "code_digest": code_digest(root)}}}))
    git(root, "add", "results")
    git(root, "commit", "-q", "-m", "finished blocks")
    now = {"commit": git(root, "rev-parse", "HEAD").strip(), "code_digest": code_digest(root)}
    require_same_code_as_blocks(root / "results/latency", "cpu", "ccx33", now, root)
    require_same_code_as_blocks(root / "results/latency", "cpu", "other-machine", {"commit": "x"}, root)
    (root / "bench/a.py").write_text("a = 2\n")
    git(root, "commit", "-q", "-am", "code change")
    now = {"commit": git(root, "rev-parse", "HEAD").strip(), "code_digest": code_digest(root)}
    why = rf"measured by other code \(these code paths differ from commit {first}: bench/a\.py\)"
    with pytest.raises(BenchError, match=why):
        require_same_code_as_blocks(root / "results/latency", "cpu", "ccx33", now, root)


def test_api_session_resumed_with_other_code_is_refused(
    tmp_git_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench latency api --session S`` goes through the same check before measuring (its session folder)."""
    from bench.latency.api_command import ApiRequest, run_api
    from tests.conftest import git

    root = tmp_git_repo([{"bench/a.py": "a = 1\n"}])
    old = git(root, "rev-parse", "HEAD").strip()
    out = root / "results" / "latency"
    block = out / "published/api/20261201T0815Z-morning/voyage-rerank-3/k20-pass1.json"
    block.parent.mkdir(parents=True)
    block.write_text(json.dumps({"manifest": {"git": {"commit": old, "code_digest": "f" * 64}}}))
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")
    monkeypatch.setattr("bench.records.guard.preflight", lambda kind, **kw: {"kind": kind})
    monkeypatch.setattr("bench.latency.api_command.study_inputs", lambda *a: None)
    req = ApiRequest(
        opt_out="yes",
        label=None,
        session="20261201T0815Z-morning",
        base_url="http://127.0.0.1:9",
        models=("voyage-rerank-3",),
        depths=(20,),
        stage="hybrid-71k",
        allow_busy=True,
        allow_unrated=True,
        root=root,
        out_root=out,
        first_stage_dir=root,
        runs_dir=root,
        checks_dir=root,
    )
    with pytest.raises(BenchError, match="this finished block was measured by other code"):
        run_api(req)
