"""``bench latency first-stage``: Typesense query time for every stage, server-reported and client-side
(plan section "Latency": "First stage: Typesense query time on the desktop for every stage"; section
"Costs": p95 of first stage plus reranker, summed per query).

The first-stage runs (``bench first-stage``) already time every query: one ``POST /multi_search`` per
query, ``time.perf_counter_ns`` around it, and Typesense's ``search_time_ms``, after 20 discarded warm-up
queries (``bench.firststage.queries.run_queries``). This command turns each stage record
(``results/first-stage/<stage>.json``) into a latency block (target = stage, k = 100, pass 1), with the
per-query client and server times and the query ids, so the costs section reads first stage and reranker
through the same reader. The host state of that run was not recorded beside it, which every such block
says in a mark. A record without per-query ids (written before they were added) is refused by name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_bytes_atomic
from analysis.latency import Accuracy, Block, Sample, read_block
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import FIRST_STAGE_DEPTH, STAGES
from bench.integrity.hashing import sha256_file

HOST_MARK = "host state not recorded: times taken during the bench first-stage run (load, clocks unknown)"
TIMER = (
    "client: time.perf_counter_ns around one POST /multi_search (one search) per query; server: "
    "Typesense's search_time_ms; 20 warm-up queries discarded by bench first-stage"
)


def block_from_record(
    record: Mapping[str, Any],
    path: Path,
    *,
    machine: str,
    session: str,
    published: bool,
    manifest: Mapping[str, Any],
) -> Block:
    lat = record.get("latency")
    stage = record.get("stage")
    if not isinstance(lat, dict) or stage not in STAGES:
        raise BenchError(f"{path}: not a first-stage record with a `latency` section")
    ids, client, server = (
        lat.get("per_query_ids"),
        lat.get("per_query_client_ms"),
        lat.get("per_query_server_ms"),
    )
    if not ids:
        raise BenchError(
            f"{path}: the record has no per_query_ids (written by an older bench first-stage); rerun "
            f"`{hint(f'first-stage {stage}')}` to record them"
        )
    if not (isinstance(client, list) and isinstance(server, list) and len(ids) == len(client) == len(server)):
        raise BenchError(f"{path}: per-query ids, client and server times differ in length")
    warm = int(lat.get("warmup_queries_discarded") or 0)
    samples = tuple(
        Sample(
            query_id=str(q),
            k=FIRST_STAGE_DEPTH,
            pass_=1,
            ns=round(float(c) * 1e6),
            server_ms=float(s),
            n_passages=FIRST_STAGE_DEPTH,
        )
        for q, c, s in zip(ids, client, server, strict=True)
    )
    not_recorded = {"recorded": False, "reason": HOST_MARK}
    return Block(
        kind="first-stage",
        machine=machine,
        session=session,
        target=str(stage),
        target_type="first-stage",
        k=FIRST_STAGE_DEPTH,
        pass_=1,
        published=published,
        marks=(HOST_MARK,),
        allow_busy=False,
        allow_unrated=False,
        started_utc=str(record.get("utc") or manifest.get("utc") or ""),
        finished_utc=str(manifest.get("utc") or ""),
        query_seed=None,
        query_ids=tuple(map(str, ids)),
        warmup_query_ids=tuple(map(str, ids[:warm])),
        chunk_size=None,
        timer=TIMER,
        host_before=not_recorded,
        host_after=not_recorded,
        accuracy=Accuracy("not-checked", None, None, 0, None, (), "a first stage has no scores to compare"),
        samples=samples,
        manifest=manifest,
        candidates={
            "stage": stage,
            "record": str(path),
            "sha256": sha256_file(path),
            "server_version": record.get("server_version"),
            "mode": record.get("mode"),
        },
    )


def convert(
    records_dir: Path,
    out_root: Path,
    *,
    machine: str,
    session: str,
    published: bool,
    manifest: Mapping[str, Any],
    stages: tuple[str, ...] = (),
) -> list[tuple[Block, bool]]:
    """Every stage record under ``records_dir`` (or only ``stages``) into a block; finished blocks kept."""
    wanted = stages or tuple(s for s in STAGES if (records_dir / f"{s}.json").is_file())
    if not wanted:
        raise BenchError(
            f"{records_dir}: no first-stage records (<stage>.json); run `{hint('first-stage')}` first"
        )
    out = []
    for stage in wanted:
        path = records_dir / f"{stage}.json"
        if not path.is_file():
            raise BenchError(f"{path}: missing; run `{hint(f'first-stage {stage}')}` first")
        try:
            record = json.loads(path.read_text(encoding="utf-8-sig"))
        except json.JSONDecodeError as exc:
            raise BenchError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        if published and record.get("mode") != "measurement":
            raise BenchError(
                f"{path}: mode {record.get('mode')!r} is not a measurement; it cannot be published"
            )
        block = block_from_record(
            record, path, machine=machine, session=session, published=published, manifest=manifest
        )
        target = out_root / block.relpath()
        if target.is_file():
            out.append((read_block(target), False))
            continue
        write_bytes_atomic(target, block.to_json_bytes())
        out.append((block, True))
    return out
