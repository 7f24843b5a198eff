"""Latency blocks in the on-disk format of analysis.latency, and the prices file, for the costs tests."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from analysis.latency import Accuracy, Block, Sample


def block(
    kind: str,
    target: str,
    k: int,
    ms: Mapping[str, float],
    *,
    billed: int | None = None,
    pass_: int = 1,
    session: str = "s1",
    day: str = "2026-10-30",
    published: bool = True,
) -> Block:
    samples = tuple(
        Sample(
            query_id=q,
            k=k,
            pass_=pass_,
            ns=round(t * 1e6),
            n_passages=k,
            billed_tokens=billed if kind == "api" else None,
            server_ms=t if kind == "first-stage" else None,
        )
        for q, t in ms.items()
    )
    return Block(
        kind=kind,
        machine=f"{kind} test machine",
        session=session,
        target=target,
        target_type="first-stage" if kind == "first-stage" else "reranker",
        k=k,
        pass_=pass_,
        published=published,
        marks=(),
        allow_busy=False,
        allow_unrated=False,
        started_utc=f"{day}T08:00:00Z",
        finished_utc=f"{day}T08:10:00Z",
        query_seed=None,
        query_ids=tuple(ms),
        warmup_query_ids=(),
        chunk_size=None,
        timer="perf_counter_ns",
        host_before={},
        host_after={},
        accuracy=Accuracy("not-checked", None, None, 0, None),
        samples=samples,
    )


def write_blocks(root: Path, blocks: list[Block]) -> Path:
    for b in blocks:
        path = root / b.relpath()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b.to_json_bytes())
    return root


# The prices file of the costs tests and of the golden study (tests/golden): two API prices, a server's
# IPv4 add-on in EUR, two LLM prices in USD and EUR, all dated the packaged ECB file's last day.
# The one prices file of the tests and benchmarks (example values, not prices): tests/fixtures/prices.toml
PRICES_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "prices.toml"
PRICES = PRICES_FILE.read_text(encoding="utf-8")
