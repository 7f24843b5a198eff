"""bench latency api against a loopback server: successful-attempt time, retries per attempt (429 with
Retry-After, 5xx), a query that fails for good, billed tokens per k, TCP connect baseline, the opt-out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analysis.latency import billed_tokens_per_query, block_summary, read_blocks
from bench.cli import cli
from bench.latency.api import measure_api, new_session
from bench.latency.run import Inputs
from bench.rerankers.voyage import VoyageReranker
from tests.latency.fakes import quiet_host
from tests.support.voyage_api import FakeVoyage, Reply, first_stage_order


def inputs(n: int = 4, k: int = 100) -> Inputs:
    queries = {f"q{i}": f"wer war nummer {i}" for i in range(n)}
    lists = {q: tuple(f"{q}-d{j}" for j in range(k)) for q in queries}
    texts = {d: f"Passage {d} mit Text" for ds in lists.values() for d in ds}
    return Inputs(queries, lists, texts, {"stage": "hybrid-71k", "run_file": "x", "sha256": "0" * 64})


def test_api_blocks_with_retries_failures_and_billed_tokens(tmp_path: Path) -> None:
    waits: list[float] = []
    with FakeVoyage(score=first_stage_order) as server:
        server.by_query["wer war nummer 1"] = [
            Reply(429, headers={"Retry-After": "2"}),
            Reply(200, delay_s=0.05),
        ]
        server.by_query["wer war nummer 2"] = [Reply(503)] * 3  # fails for good with max_attempts=3
        server.by_query["wer war nummer 3"] = [Reply(200, delay_s=0.03)]

        def make(model: str) -> Any:
            return VoyageReranker(
                model,
                api_key="k-TEST",
                base_url=server.url,
                max_attempts=3,
                backoff_s=0.0,
                sleep=waits.append,
            )

        session = new_session("no", server.url, "test", None)
        measure_api(
            ["voyage-rerank-3"],
            (20, 100),
            inputs(),
            session,
            out_root=tmp_path,
            runs_dir=None,
            stage="hybrid-71k",
            manifest={"host": {"hostname": "box"}},
            make_reranker=make,
            host=quiet_host,
        )
    blocks = read_blocks(tmp_path)
    assert [(b.kind, b.target, b.k, b.published) for b in blocks] == [
        ("api", "voyage-rerank-3", 20, True),
        ("api", "voyage-rerank-3", 100, True),
    ]
    b20, b100 = blocks
    assert b20.api is not None and b20.api["training_opt_out"] == "no" and b20.api["time_of_day"] == "test"
    assert len(b20.api["connect_ns"]) == 5 and all(
        isinstance(x, int) and x > 0 for x in b20.api["connect_ns"]
    )
    assert b20.warmup_query_ids == ()
    by_q = {s.query_id: s for s in b20.samples}
    assert by_q["q1"].retried and [a.status for a in by_q["q1"].attempts or ()] == [429, 200]
    assert 2.0 in waits  # Retry-After honoured
    assert by_q["q1"].ns is not None and by_q["q1"].ns >= 50_000_000  # the successful attempt's time only
    assert by_q["q3"].ns is not None and 30_000_000 <= by_q["q3"].ns < 2_000_000_000
    assert by_q["q2"].ns is None and "after 3 attempts" in (by_q["q2"].error or "")
    s = block_summary(b20)
    assert s.failed == 1 and s.retried == 2 and s.latency.n == 3
    billed = billed_tokens_per_query(b100)
    assert billed["q0"] == 100 * 4 + 100 * 4  # 4 words per passage, plus the 4-word query per document
    assert "q2" not in billed_tokens_per_query(b20) and billed["q2"] == 800  # the 503s were used up at k=20
    assert b20.accuracy.status == "not-checked"


def test_missing_opt_out_and_missing_key_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["latency", "api", "--out", str(tmp_path)])
    assert r.exit_code == 1 and "--training-opt-out is required (yes|no)" in r.output
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.setattr("bench.core.paths.repo_root", lambda: tmp_path)
    r = runner.invoke(cli, ["latency", "api", "--training-opt-out", "yes", "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "No Voyage API key" in r.output
    assert not (tmp_path / "o").exists()


def test_the_endpoint_is_voyage_base_url_as_for_every_other_voyage_phase(
    tmp_git_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench latency api`` without --base-url calls the endpoint the other Voyage phases call
    (``VOYAGE_BASE_URL``, else Voyage's): before the fix it always called api.voyageai.com, so the runbook's
    step 14 sat in retry back-off against an unreachable host while check-adapters and quality had used the
    loopback server (found by tests/runbook)."""
    from bench.latency.api_command import ApiRequest, run_api

    root = tmp_git_repo([{"bench/a.py": "a = 1\n"}])
    out = root / "results" / "latency"
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")
    monkeypatch.setattr("bench.records.guard.preflight", lambda kind, **kw: {"kind": kind})
    monkeypatch.setattr("bench.latency.api_command.study_inputs", lambda *a: inputs(n=2, k=20))
    with FakeVoyage(score=first_stage_order) as server:
        monkeypatch.setenv("VOYAGE_BASE_URL", server.url)
        req = ApiRequest(
            opt_out="yes",
            label="test",
            session=None,
            base_url=None,
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
        run_api(req, host=quiet_host)
    assert sorted(r["json"]["query"] for r in server.requests) == ["wer war nummer 0", "wer war nummer 1"]
    (block,) = read_blocks(out)
    assert block.api is not None and block.api["endpoint"] == server.url
    assert all(s.ns is not None and s.attempts is not None and len(s.attempts) == 1 for s in block.samples)
