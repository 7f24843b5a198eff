"""`bench rehearse` end to end on a small real subset (2 MIRACL-de queries, 3 of their judged passages each, 2
NoMIRACL passages, each passage cut to its first 12 words, in BEIR layout): the real PyPI Typesense, the real
MiniLM stand-ins, the quality phase and `analysis report`. The run is the session's shared one (``rehearsal``
fixture, tests/support/rehearsal.py); the resume works on a copy of it. Then Ctrl-C at a known point (its
Typesense server is up) and `--resume`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core.journal import Journal
from bench.rerankers.openvino.manifest import verify_folder
from tests.support.rehearsal import (
    ROOT,
    SHARED_QUERIES,
    STOP_WORD_QUERY,
    Rehearsal,
    servers_under,
    wait_for_server,
)

# the shared run is made inside the first test that asks for it: up to a whole rehearsal on a loaded machine
pytestmark = [pytest.mark.typesense, pytest.mark.model, pytest.mark.timeout(1800)]
RAN = ("keyword-71k", "vector-71k", "keyword-plain-71k")
RERANKED = ("keyword-71k", "vector-71k")  # keyword-plain-71k is reference only (plan): no rerankers
MODELS = ("minilm-standin", "bm25-standin")
CTRL_C_QUERIES = 2  # --max-queries of the interrupted rehearsal


def test_rehearsal_end_to_end(rehearsal: Rehearsal) -> None:
    """On the mini dataset without titles and with one query of stop words only (the bad input): the
    run goes on, that query has no keyword-71k candidates, scores 0, and the report counts it."""
    out = rehearsal.dir
    assert rehearsal.returncode == 0, rehearsal.stdout + rehearsal.stderr
    printed = rehearsal.stdout
    first = (out / "report.md").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# REHEARSAL, not study results")
    assert "first stages run: keyword-71k (REHEARSAL SUBSTITUTE: the plan's German fields" in first
    # the vector stage is marked exactly when it ran as the exact-search substitute (HNSW missed the plan's
    # 99 % overlap; on a corpus this small the default search usually meets it, so both cases occur)
    vec = json.loads((out / "first-stage" / "vector-71k.json").read_text(encoding="utf-8"))
    marked = "vector-71k (REHEARSAL SUBSTITUTE: exact flat search" in first
    assert marked == bool(vec["ef"].get("substitute")), (vec["ef"], first)
    assert marked or "vector-71k, keyword-plain-71k;" in first
    assert "keyword-plain-71k;" in first
    assert "refused: hybrid-71k (" in first and "keyword-full (stem needs Typesense >= 26.0" in first
    assert "minilm-standin" in first and "bm25-standin" in first and "stand in for" in first
    kw = json.loads((out / "first-stage" / "keyword-71k.json").read_text(encoding="utf-8"))
    assert kw["substitute"]["kind"] == "keyword" and kw["mode"] == "rehearsal"
    for stage in RAN:
        assert (out / "runs" / "first-stage" / f"{stage}.trec").is_file()
        for k in (20, 50, 100):
            for model in MODELS:
                assert (out / "runs" / stage / f"{model}@{k}.trec").is_file() == (stage in RERANKED)
        assert (out / "quality" / f"{stage}.json").is_file()
    with Journal(out / "journal.jsonl") as j:
        # timing calls at 20 and 50 as well; the stop-word query has vector-71k candidates only
        assert len(j) == len(MODELS) * (SHARED_QUERIES + SHARED_QUERIES + 1) * 3
        assert not any(r["qid"] == STOP_WORD_QUERY[0] and r["stage"] == "keyword-71k" for r in j)
        assert all(r["status"] == "ok" and r["latency_ns"] > 0 for r in j)
    summary = json.loads((out / "rehearsal.json").read_text())
    assert summary["pointwise_max_abs_diff"]["minilm-standin"] < 1e-5
    assert summary["pointwise_max_abs_diff"]["bm25-standin"] == 0.0  # BM25 of a passage is one number
    # two-model Holm families per stage and depth
    for stage in RERANKED:
        quality = json.loads((out / "quality" / f"{stage}.json").read_text(encoding="utf-8"))
        fams = {f["id"]: f for f in quality["families"]}
        for k in (20, 50, 100):
            vs_first = next(f for i, f in fams.items() if i.endswith(f"@{k}/vs-first-stage"))
            assert sorted(c["model"] for c in vs_first["comparisons"]) == sorted(MODELS)
    assert {"lock check", "first stages", "rerank", "report", "total"} <= set(summary["times_s"])
    assert "| vector-71k | minilm-standin‡@20 |" in printed
    assert "| keyword-71k | bm25-standin‡@100 |" in printed
    # the latency step: the stand-in encodes query and all k passages per call; never published
    blocks = sorted(p.relative_to(out).as_posix() for p in (out / "latency").rglob("k*-pass1.json"))
    assert blocks == sorted(
        [
            f"latency/not-published/cpu/rehearsal/{m}/k{k}-pass1.json"
            for m in ("bm25-standin", "minilm-standin", "minilm-standin-int8")
            for k in (100, 20)
        ]
        + [
            f"latency/not-published/first-stage/rehearsal/{s}/k100-pass1.json"
            for s in ("keyword-71k", "keyword-plain-71k", "vector-71k")
        ]
    )
    assert {r["accuracy"] for r in summary["latency_step"]["rows"] if r["target"] == "minilm-standin"} == {
        "passed"
    }
    report = (out / "report.md").read_text(encoding="utf-8")
    n_queries = SHARED_QUERIES + 1  # and the stop-word query
    assert f"Queries without candidates: 1 of {n_queries} ({STOP_WORD_QUERY[0]}; each scores 0" in report
    assert "1 query consisted of stop words only and got no candidates" in report
    kw_quality = json.loads((out / "quality" / "keyword-71k.json").read_text(encoding="utf-8"))
    assert kw_quality["first_stage"]["queries_missing"] == [STOP_WORD_QUERY[0]]
    assert "## Latency" in report and "## OpenVINO int8 method on the stand-in (rehearsal)" in report
    assert "int8 flags present:" in report and "‡ declared rehearsal stand-in" in report
    int8 = json.loads((out / "int8.json").read_text())  # the int8 step on the latency step's queries
    assert int8["queries"] == summary["latency_step"]["query_ids"] and int8["calibration"]["n"] == 300
    assert int8["latency"]["int8"]["100"]["n"] == len(int8["queries"]) and -1 <= int8["spearman_min"] <= 1
    # quantised in this run (the first on this checkout, or after the quantising code changed) or reused from
    # the per-checkout test cache (tests.support.rehearsal.INT8_CACHE): a folder that was not there before
    # the run cannot have been reused, the log says which happened, and the folder verifies now
    folder = Path(int8["int8_folder"])
    if int8["reused"] is True:
        assert (
            folder.name in rehearsal.int8_before and f"rehearse: int8: reusing {folder}" in rehearsal.stderr
        )
    else:
        assert int8["reused"] is False and "rehearse: int8: reusing" not in rehearsal.stderr
        assert "rehearse: int8: quantising the stand-in (300 pairs, configuration" in rehearsal.stderr
    assert verify_folder(folder)["files"] == int8["int8_manifest"]["files"]
    assert "int8 (stand-in," in printed
    assert int8["inference_precision"] == "f32" and int8["int8_isa"] is not None  # what the speed-up is of
    assert "  int8 precision f32, int8 kernels on " in printed
    assert "| minilm-standin | 20 |" in printed
    assert not (ROOT / "runs" / "vector-71k").exists()  # never into the study's runs/
    assert (out / "judged" / "packet.json").is_file() and not (out / "judged" / "labels.json").exists()
    assert "judge not run: ANTHROPIC_API_KEY is not set" in printed
    assert "pitfalls experiment refused" in printed


def test_resume_of_a_finished_rehearsal_is_a_no_op(
    rehearsal: Rehearsal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rehearsal.returncode == 0, rehearsal.stderr
    out = rehearsal.copy_to(tmp_path / "reh")
    monkeypatch.setenv("BENCH_CACHE_DIR", str(rehearsal.cache))
    runs_before = {p: p.read_bytes() for p in (out / "runs").rglob("*.trec")}
    assert runs_before
    # the latency blocks and the int8 record are finished work as well: kept, not timed again
    timed_before = {p: p.read_bytes() for p in [out / "int8.json", *(out / "latency").rglob("*.json")]}
    int8_before = json.loads(timed_before[out / "int8.json"])
    assert int8_before["computed_from"]["fp32_run"]
    again = CliRunner().invoke(cli, ["rehearse", "--resume", str(out)])
    assert again.exit_code == 0, again.output + (again.stderr or "")
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["status"] for s in manifest["sessions"]] == ["complete", "complete"]
    assert manifest["sessions"][-1]["scored"] == 0
    assert {p: p.read_bytes() for p in (out / "runs").rglob("*.trec")} == runs_before
    assert "int8.json was computed from these same inputs; kept, not timed again" in again.output
    assert {p: p.read_bytes() for p in timed_before} == timed_before
    assert json.loads((out / "rehearsal.json").read_text())["int8"] == int8_before


def _communicate_or_explain(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    """stderr of ``proc`` once it has ended; on a timeout, a failure that says which process still held on
    (the rehearsal itself, or a child keeping the pipes open) and where the rehearsal's stderr stopped."""
    import psutil

    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired as exc:
        alive = proc.poll() is None
        try:
            kids = [f"{k.pid} {' '.join(k.cmdline())[:120]}" for k in psutil.Process(proc.pid).children(True)]
        except psutil.NoSuchProcess:
            kids = ["(the rehearsal is gone; its children cannot be listed from it)"]
        holders = [
            f"{p.info['pid']} {' '.join(p.info['cmdline'] or [])[:120]}"
            for p in psutil.process_iter(["pid", "cmdline"])
            if "typesense" in " ".join(p.info["cmdline"] or []).lower()
        ]
        tail = (exc.stderr or b"").decode(errors="replace")[-3000:]
        proc.kill()
        pytest.fail(
            f"no exit {timeout:.0f} s after SIGINT; rehearsal still running: {alive}; its children: {kids}; "
            f"typesense processes: {holders}; stderr tail:\n{tail}"
        )


def test_ctrl_c_then_resume(rehearsal: Rehearsal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C once the rehearsal's Typesense server is up (its first stages: an event, not a time), then
    `--resume` to the end (in this process). The shared run's cache holds the quantised stand-in, so no second
    quantisation, and on the shared run's dataset (its first two query ids, the two real queries) the vectors
    of every passage and query as well: the vector stage and the reranking stand-in encode nothing again."""
    tmp = tmp_path / "tmp"  # the rehearsal's own TMPDIR tells its server apart from other tests' servers
    tmp.mkdir()
    out = tmp_path / "reh"
    env = rehearsal.env(TMPDIR=str(tmp))
    # two queries: the resume still runs every step (the latency and int8 steps time each query at k = 100)
    limit = ("--max-queries", str(CTRL_C_QUERIES))
    cmd = rehearsal.command("--dataset", str(rehearsal.dataset), *limit, "--out", str(out))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_server(proc, tmp)
    proc.send_signal(signal.SIGINT)
    err = _communicate_or_explain(proc, timeout=600)
    assert proc.returncode == 130, err.decode()
    assert b"rehearsal interrupted" in err and b"--resume" in err
    assert servers_under(tmp) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sessions"][-1]["status"] == "interrupted"
    # the resume in this process (what it checks is the resumed folder, not a process boundary): a process of
    # its own imports torch, transformers, sentence-transformers, OpenVINO and matplotlib once more; here
    # they are imported once per worker. In the interrupted run's environment (``env``: its cache, TMPDIR,
    # no API key); no time limit of its own (pytest's timeout is the guard)
    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    resumed = CliRunner().invoke(cli, ["rehearse", "--resume", str(out)])
    assert resumed.exit_code == 0, resumed.output + (resumed.stderr or "")
    assert servers_under(tmp) == []
    assert (out / "report.md").read_text().startswith("# REHEARSAL")
    with Journal(out / "journal.jsonl") as j:
        assert len(j) == len(MODELS) * len(RERANKED) * CTRL_C_QUERIES * 3
        assert len({r["qid"] for r in j}) == CTRL_C_QUERIES
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["status"] for s in manifest["sessions"]] == ["interrupted", "complete"]
