"""The rehearsal's cost step: the plan's cost section (``analysis.costs``) on the stand-in's latencies.

Latency: the rehearsal's own latency blocks under ``<rehearsal>/latency`` when the latency step wrote them
(its CPU reranker blocks are also priced as the GPU, in memory);
otherwise the quality phase's timed calls (journal ``latency_ns``, the first 20 calls per stage and depth
left out as warm-up, as in the rehearsal's table) and the first stages' per-query client times, turned into
blocks of the latency format in memory (never written as results). The same stand-in CPU timings are shown
as "GPU" (priced as the GEX45) and as "CPU fp32" (priced as the CCX33), so that both of the plan's server
prices are exercised; they say nothing about either machine. Prices: the committed ``prices.toml`` (the API
and LLM prices are not entered, so their cells say "price missing"; accepted and recorded, ``allow_missing``).
Passage tokens: the Voyage tokenizer when its snapshot is on this machine, else the refusal is reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from analysis.costs.latency import INT8_SUFFIX
from analysis.costs.prices import EMPTY, read_prices
from analysis.costs.section import CostInputs
from analysis.inputs.trec import read_run_table
from analysis.latency import Accuracy, Block, Sample, block_files, read_blocks
from bench.core.errors import BenchError
from bench.core.journal import Journal
from bench.core.plan import WARMUP_CALLS
from bench.costs.tokens import load_voyage_tokenizer, passage_tokens_record
from bench.rehearse.firststages import stage_paths

__all__ = ["STANDIN_MACHINES", "rehearsal_costs"]

STANDIN_MACHINES = ("gpu", "cpu")  # priced as GEX45 and CCX33


def _block(
    kind: str,
    target: str,
    target_type: str,
    k: int,
    session: str,
    machine: str,
    calls: Sequence[tuple[str, int]],
    warmup: Sequence[str],
    utc: str,
) -> Block:
    samples = tuple(Sample(query_id=q, k=k, pass_=1, ns=ns, n_passages=k) for q, ns in calls)
    return Block(
        kind=kind,
        machine=machine,
        session=session,
        target=target,
        target_type=target_type,
        k=k,
        pass_=1,
        published=False,
        marks=("rehearsal stand-in",),
        allow_busy=True,
        allow_unrated=True,
        started_utc=utc,
        finished_utc=utc,
        query_seed=None,
        query_ids=tuple(q for q, _ in calls),
        warmup_query_ids=tuple(warmup),
        chunk_size=None,
        timer="time.perf_counter_ns around the adapter call (rehearsal quality phase)",
        host_before={},
        host_after={},
        accuracy=Accuracy("not-checked", None, None, 0, None, (), "rehearsal"),
        samples=samples,
        path=f"(in memory) {kind}/{session}/{target}/k{k}",
    )


def standin_blocks(directory: Path, stages: Sequence[str], queries: Sequence[str]) -> list[Block]:
    """Blocks of the latency format from the rehearsal's journal and first-stage records (in memory)."""
    with Journal(directory / "journal.jsonl") as journal:
        records = list(journal.records)
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["stage"], r["model"], r["depth"]), []).append(r)
    utc = records[0]["utc"] if records else "1970-01-01T00:00:00Z"
    blocks: list[Block] = []
    for (stage, model, depth), recs in sorted(groups.items()):
        skip = WARMUP_CALLS if len(recs) > WARMUP_CALLS else 0
        calls = [(r["qid"], int(r["latency_ns"])) for r in recs[skip:] if r["latency_ns"] is not None]
        warm = [r["qid"] for r in recs[:skip]]
        for kind in STANDIN_MACHINES:
            blocks.append(
                _block(
                    kind,
                    model,
                    "reranker",
                    depth,
                    f"rehearsal-{stage}",
                    "rehearsal CPU (stand-in)",
                    calls,
                    warm,
                    utc,
                )
            )
    for stage in stages:
        record = json.loads(stage_paths(directory, stage)[1].read_text(encoding="utf-8"))
        latency = record.get("latency") or {}
        client = latency.get("per_query_client_ms") or []
        if len(client) != len(queries):
            raise BenchError(
                f"{stage_paths(directory, stage)[1]}: {len(client)} first-stage times for "
                f"{len(queries)} queries; rerun the rehearsal"
            )
        calls = [(q, round(ms * 1e6)) for q, ms in zip(queries, client, strict=True)]
        blocks.append(
            _block(
                "first-stage",
                stage,
                "first-stage",
                100,
                "rehearsal",
                "rehearsal Typesense 0.24.1",
                calls,
                [],
                utc,
            )
        )
    return blocks


def _passage_tokens(
    directory: Path, stages: Sequence[str], texts: Mapping[str, str]
) -> tuple[Path | None, str]:
    try:
        tok = load_voyage_tokenizer()
    except BenchError as exc:
        return None, f"context calculation refused: {exc.message}"
    lists, shas = {}, {}
    for stage in stages:
        table = read_run_table(stage_paths(directory, stage)[0], allow_unknown_queries=True)
        lists[stage] = {q: tuple(d for d, _ in rows[:100]) for q, rows in table.as_dict().items()}
        shas[stage] = table.sha256 or ""
    record = passage_tokens_record(tok, lists, texts, shas)
    path = directory / "costs-passage-tokens.json"
    write_json_atomic(path, record)
    return path, f"passage tokens: {tok.repo}@{tok.revision} (local snapshot)"


def rehearsal_costs(
    directory: Path, stages: Sequence[str], queries: Sequence[str], texts: Mapping[str, str], *, root: Path
) -> CostInputs:
    """The costs section's inputs for a rehearsal (see the module docstring)."""
    latency_dir = directory / "latency"
    if latency_dir.is_dir() and block_files(latency_dir):
        read = read_blocks(latency_dir, published=False)
        # the CPU timings priced both ways: as the CCX33 (CPU fp32) and, in memory, as the GEX45 (GPU)
        copies = [
            replace(b, kind="gpu", path=f"(in memory, copy of) {b.path}")
            for b in read
            if b.kind == "cpu" and b.target_type == "reranker" and not b.target.endswith(INT8_SUFFIX)
        ]
        blocks: Sequence[Block] = (*read, *copies)
        source = f"{latency_dir} (the rehearsal's latency blocks; CPU blocks also shown as GPU)"
    else:
        blocks = standin_blocks(directory, stages, queries)
        source = "the quality phase's timed calls and the first stages' client times (in memory)"
    prices_path = root / "prices.toml"
    prices = read_prices(prices_path) if prices_path.is_file() else EMPTY
    tokens, token_note = _passage_tokens(directory, stages, texts)
    return CostInputs(
        blocks=blocks,
        prices=prices,
        passage_tokens=tokens,
        allow_missing=True,
        latency_label=source,
        notes=(
            "REHEARSAL: stand-in latencies (this CPU, the stand-in model); the same timings are shown as GPU "
            "(GEX45 price) and CPU fp32 (CCX33 price) to exercise both plan prices; they describe neither "
            "machine. API and LLM prices are not entered (price missing), accepted here (allow_missing).",
            token_note,
        ),
    )
