"""The latency block format: round trip, the one percentile method against an independent reference,
per-query helpers, and refusals (tampered summary, wrong folder, missing key)."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from analysis.latency import (
    Accuracy,
    Attempt,
    Block,
    LatencyFormatError,
    Sample,
    billed_tokens_per_query,
    block_summary,
    per_query_ns,
    read_block,
    read_blocks,
    summarise,
    summed_per_query,
)


def make_block(
    ns: list[int | None],
    *,
    kind: str = "cpu",
    target: str = "bge-v2-m3",
    k: int = 20,
    published: bool = True,
    api: bool = False,
) -> Block:
    samples = []
    for i, t in enumerate(ns):
        attempts = None
        if api:
            n_att = 2 if i == 0 else 1
            attempts = tuple(
                Attempt(attempt=a + 1, status=429 if a + 1 < n_att else 200, ns=t if a + 1 == n_att else 5)
                for a in range(n_att)
            )
        samples.append(
            Sample(
                query_id=f"q{i}",
                k=k,
                pass_=1,
                ns=t,
                chunk_size=None if api else k,
                n_passages=k,
                input_tokens=None if api else 100 + i,
                max_input_tokens=None if api else 30,
                attempts=attempts,
                retried=(i == 0) if api else None,
                billed_tokens=(1000 + i) if api and t is not None else None,
                error=None if t is not None else "HTTP 500 six times",
            )
        )
    return Block(
        kind=kind,
        machine="test machine",
        session="desk-1",
        target=target,
        target_type="reranker",
        k=k,
        pass_=1,
        published=published,
        marks=(),
        allow_busy=False,
        allow_unrated=False,
        started_utc="2026-11-30T00:00:00Z",
        finished_utc="2026-11-30T00:01:00Z",
        query_seed=20261009,
        query_ids=tuple(s.query_id for s in samples),
        warmup_query_ids=("q0", "q1"),
        chunk_size=k,
        timer="perf_counter_ns",
        host_before={"load1": 0.1},
        host_after={"load1": 0.2},
        accuracy=Accuracy("passed", "runs/x.trec", 0.99, len(ns), 0.995),
        samples=tuple(samples),
    )


def write(root: Path, block: Block) -> Path:
    path = root / block.relpath()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(block.to_json_bytes())
    return path


def test_percentiles_match_the_type7_reference() -> None:
    ns = [7_000_000, 1_000_000, 3_500_000, 2_000_000, 9_100_000, 4_000_000, 1_250_000]
    s = summarise(ns)
    ref = statistics.quantiles([x / 1e6 for x in ns], n=100, method="inclusive")  # Hyndman & Fan type 7
    assert s.n == 7 and s.min_ms == 1.0 and s.max_ms == 9.1
    assert s.p50_ms == pytest.approx(ref[49], rel=1e-12) and s.p50_ms == 3.5
    assert s.p95_ms == pytest.approx(ref[94], rel=1e-12)
    assert s.mean_ms == pytest.approx(statistics.fmean(ns) / 1e6, rel=1e-12)
    empty = summarise([])
    assert empty.n == 0 and empty.p50_ms is None and empty.mean_ms is None


def test_round_trip_and_recomputed_summary(tmp_path: Path) -> None:
    block = make_block([3_000_000, 1_000_000, 2_000_000])
    path = write(tmp_path, block)
    assert path.relative_to(tmp_path).as_posix() == "published/cpu/desk-1/bge-v2-m3/k20-pass1.json"
    back = read_block(path)
    assert replace(back, path=None) == block
    stored = json.loads(path.read_text())["summary"]
    assert stored["latency"]["p50_ms"] == 2.0 and stored["input_tokens"]["max"] == 102
    assert per_query_ns(back) == {"q0": 3_000_000, "q1": 1_000_000, "q2": 2_000_000}


def test_api_block_counts_retries_failures_and_billed_tokens(tmp_path: Path) -> None:
    block = make_block([4_000_000, None, 6_000_000], kind="api", target="voyage-rerank-3", api=True)
    back = read_block(write(tmp_path, block))
    summary = block_summary(back)
    assert summary.latency.n == 2 and summary.failed == 1 and summary.retried == 1
    assert summary.billed_tokens == 1000 + 1002
    assert billed_tokens_per_query(back) == {"q0": 1000, "q2": 1002}
    assert per_query_ns(back) == {"q0": 4_000_000, "q2": 6_000_000}  # the failed query has no latency
    assert back.samples[0].attempts is not None and back.samples[0].attempts[0].status == 429


def test_sum_per_query_keeps_only_common_queries() -> None:
    assert summed_per_query([{"a": 1, "b": 2}, {"a": 10, "c": 5}]) == {"a": 11}


def test_tampered_summary_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, make_block([3_000_000, 1_000_000]))
    obj = json.loads(path.read_text())
    obj["summary"]["latency"]["p95_ms"] = 1.5
    path.write_text(json.dumps(obj))
    with pytest.raises(LatencyFormatError, match="recomputed from `samples`"):
        read_block(path)


def test_not_published_block_under_published_folder_is_refused(tmp_path: Path) -> None:
    block = make_block([1_000_000], published=False)
    wrong = tmp_path / "published/cpu/desk-1/bge-v2-m3/k20-pass1.json"
    wrong.parent.mkdir(parents=True)
    wrong.write_bytes(block.to_json_bytes())
    with pytest.raises(LatencyFormatError, match="not-published/cpu/desk-1"):
        read_block(wrong)


def test_reader_filters_publication_tolerates_bom_and_ignores_temp_files(tmp_path: Path) -> None:
    write(tmp_path, make_block([1_000_000]))
    unpub = tmp_path / make_block([2_000_000], published=False).relpath()
    unpub.parent.mkdir(parents=True)
    unpub.write_bytes(b"\xef\xbb\xbf" + make_block([2_000_000], published=False).to_json_bytes())
    (unpub.parent / ".k20-pass1.json.123.tmp").write_text("{")
    assert [b.published for b in read_blocks(tmp_path)] == [False, True]
    assert [b.published for b in read_blocks(tmp_path, published=True)] == [True]
    assert [b.published for b in read_blocks(tmp_path / "not-published")] == [False]


def test_missing_key_names_file_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, make_block([1_000_000]))
    obj = json.loads(path.read_text())
    del obj["samples"][0]["n_passages"]
    path.write_text(json.dumps(obj))
    with pytest.raises(LatencyFormatError, match=r"samples\[0\].*'n_passages' is missing"):
        read_block(path)
