"""Run one first stage end to end (plan section "First stages"): check the server, ask it the behavioural
probes the stage needs (``bench.firststage.probes``: they refuse the stage or, in a rehearsal, choose its
declared substitute), import, tune ef, search every query, write the TREC run (top 100) and the result
record (with the probes' requests, answers and verdicts under ``probes``). ``run_stage`` is the one
generic runner; the stages themselves are data (``bench.firststage.definitions``).

Outputs are written last and atomically: the run file first, then the JSON record (which names the run
file's SHA-256); if the record cannot be written, the run file is removed, so a run file without its
record never looks complete.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from analysis.core.atomic import write_json_atomic
from analysis.inputs.trec import read_qrels, write_run
from analysis.stats.metrics import MISSING_QUERY_POLICY, mean_scores
from analysis.stats.ranking import TIE_RULE
from bench.core.errors import BenchError
from bench.core.paths import cache_dir
from bench.core.plan import (
    EF_MIN_OVERLAP,
    EMBEDDING_QUERY_PROMPT,
    FIRST_STAGE_DEPTH,
    TYPESENSE_IMAGE,
    WARMUP_CALLS,
)
from bench.core.progress import Progress
from bench.data import IMPORT_ORDER, Passage
from bench.firststage import probe_hyphen as ph
from bench.firststage.definitions import (
    EXACT_FILTER_FIELD,
    KEYWORD_SUBSTITUTE_DROPS,
    KEYWORD_SUBSTITUTE_STAGES,
    STAGE_DEFS,
    STOPWORD_SET_ID,
    ExactSubstitute,
    KeywordSubstitute,
    StageDef,
    vector_options,
)
from bench.firststage.embed import CachedEmbeddings, Embedder
from bench.firststage.exact import exact_top_k
from bench.firststage.features import Mode, StageRefused, check_server
from bench.firststage.importer import import_passages, text_doc
from bench.firststage.probes import Decision, ProbeReport, decide, run_probes
from bench.firststage.queries import run_queries, vector_top_ids
from bench.firststage.server import TypesenseServer
from bench.firststage.stopwords import (
    StopwordSet,
    german_stopwords,
    install_stopwords,
    rehearsal_strip_stopwords,
)
from bench.firststage.tune import EfChoice, choose_ef
from bench.integrity.hashing import sha256_file

__all__ = ["StageRefused", "StageResult", "run_stage"]


@dataclass(frozen=True)
class StageResult:
    stage: str
    run: dict[str, list[tuple[str, float]]]
    record: dict[str, Any]
    run_path: Path
    json_path: Path


def keyword_substitute(
    stage: StageDef, mode: Mode, decision: Decision, server_version: str
) -> KeywordSubstitute | None:
    """The rehearsal's keyword substitute when the probes chose it (a rehearsal of keyword-71k on a server
    whose stem or stop-word probes failed); None otherwise, and always None in a measurement."""
    if mode != "rehearsal" or stage.id not in KEYWORD_SUBSTITUTE_STAGES or not decision.keyword_substitute:
        return None
    return KeywordSubstitute(server_version)


def _stage(stage_id: str) -> StageDef:
    if stage_id not in STAGE_DEFS:
        raise BenchError(f"unknown stage {stage_id!r}; stages: {', '.join(STAGE_DEFS)}")
    return STAGE_DEFS[stage_id]


def default_checkpoint(server: TypesenseServer, collection: str) -> Path:
    host = hashlib.sha256(server.url.encode()).hexdigest()[:12]
    return cache_dir() / "typesense-import" / host / f"{collection}.json"


def _embed_corpus(cached: CachedEmbeddings, passages: Sequence[Passage]) -> np.ndarray:
    """All passage vectors in corpus order; one ``embed`` call, so the texts still to encode are sorted by
    length across the whole corpus (less padding per batch)."""
    with Progress("embed passages", len(passages), "passages") as prog:
        return cached.embed([p.passage_text for p in passages], on_progress=prog.advance, on_cached=prog.skip)


def run_stage(
    stage_id: str,
    *,
    server: TypesenseServer,
    corpus: Iterable[Passage],
    queries: Mapping[str, str],
    embedder: Embedder | CachedEmbeddings | None = None,
    mode: Mode,
    out_run: Path,
    out_json: Path,
    qrels_path: Path | None = None,
    expected_passages: int | None = None,
    checkpoint: Path | None = None,
    batch_size: int = 500,
    warmup: int = WARMUP_CALLS,
    ef_target: float | None = None,
    extra: Mapping[str, Any] | None = None,
    probes: ProbeReport | None = None,
) -> StageResult:
    """Run ``stage_id`` against ``server``; ``corpus`` in ascending MIRACL id order (checked). ``probes``:
    a report of this server that holds the stage's probes (the rehearsal asks them once for all stages);
    without it the stage's probes are asked now."""
    sdef = _stage(stage_id)
    check_server(mode, server.version)
    report = (probes if probes is not None else run_probes(server, sdef)).for_stage(sdef)
    decision = decide(sdef, mode, report)
    stage, kw_sub = _stage_for_server(sdef, mode, decision, server.version)
    cached: CachedEmbeddings | None = None
    if stage.vector:
        if embedder is None:
            raise BenchError(f"stage {stage.id} needs an embedder")
        cached = embedder if isinstance(embedder, CachedEmbeddings) else CachedEmbeddings(embedder)
    record = _stage_record(stage, mode, server)
    record["probes"] = report.record()
    queries = _stopwords_and_queries(record, stage, kw_sub, queries, mode, server, decision)
    vectors = None if cached is None else _embed_passages(stage, cached, corpus, decision)
    dims = cached.embedder.dims if cached is not None else None
    schema = stage.schema(dims, exact_filter=vectors is not None and vectors.exact_sub is not None)
    record["schema"] = schema
    builder: dict[str, Any] = {"build": vectors.build} if vectors is not None else {}
    imp = import_passages(
        server,
        schema,
        vectors.passages if vectors is not None else corpus,
        checkpoint=checkpoint or default_checkpoint(server, stage.collection),
        expected=expected_passages,
        batch_size=batch_size,
        label=f"import {stage.id}",
        **builder,
    )
    record["import"] = imp.record()
    qvecs: dict[str, np.ndarray] | None = None
    ef: int | None = None
    exact_sub: ExactSubstitute | None = None
    position: dict[str, int] = {}
    if cached is not None and vectors is not None:
        position = vectors.position
        qvecs, ef, exact_sub = _tune_ef(record, server, stage, cached, queries, vectors, ef_target, decision)
    # an empty q is a wildcard in Typesense (every document matches): a query the substitute emptied is not
    # sent; it has no candidates and scores 0
    sent = {q: t for q, t in queries.items() if t} if kw_sub is not None else queries
    sent = _hyphen_queries(record, stage, decision, sent)
    run, timings = run_queries(server, stage, sent, qvecs, ef, position, warmup=warmup, exact=exact_sub)
    _search_record(record, stage, ef, exact_sub)
    _finish_record(record, run, timings.record(), queries, warmup, qrels_path, extra)
    _write_outputs(run, record, stage.id, out_run, out_json)
    return StageResult(stage.id, run, record, out_run, out_json)


def _finish_record(
    record: dict[str, Any],
    run: dict[str, list[tuple[str, float]]],
    timings: Mapping[str, Any],
    queries: Mapping[str, str],
    warmup: int,
    qrels_path: Path | None,
    extra: Mapping[str, Any] | None,
) -> None:
    """The record's last fields: latency, the first stage's metrics where qrels are given, counts, extras."""
    record["latency"] = {"warmup_queries_discarded": min(warmup, len(queries)), **timings}
    if qrels_path is not None:
        record.update(_metrics_record(run, qrels_path))
    record["queries"] = len(queries)
    record["depth"] = FIRST_STAGE_DEPTH
    if extra:
        record.update(extra)


def _stopwords_and_queries(
    record: dict[str, Any],
    stage: StageDef,
    kw_sub: KeywordSubstitute | None,
    queries: Mapping[str, str],
    mode: Mode,
    server: TypesenseServer,
    decision: Decision,
) -> Mapping[str, str]:
    """The stop-word set recorded (plan: with every result) and applied: installed on the server for a German
    stage, or removed from the queries on the client by the rehearsal's keyword substitute (D-040), whose
    record then names the probes it stands in for. Returns the queries to send."""
    sw = german_stopwords()
    record["stopwords"] = _stopwords_record(stage, kw_sub, sw)
    if kw_sub is None:
        if stage.stopwords:
            install_stopwords(server, STOPWORD_SET_ID, sw)
        return queries
    queries = _substitute_queries(record, stage, kw_sub, sw, queries, mode, server.version)
    record["substitute"]["probes_not_honoured"] = list(decision.probes_substituted)
    typo = [p for p in decision.probes_substituted if p in ("num_typos", "typo_tokens_threshold")]
    if typo:
        record["notes"].append(
            f"REHEARSAL SUBSTITUTE: Typesense {server.version} applied no typo tolerance on the locale "
            f"fields (probes {', '.join(typo)} not honoured); the rehearsal's {stage.id} ran without it."
        )
    return queries


def _stage_for_server(
    stage: StageDef, mode: Mode, decision: Decision, version: str
) -> tuple[StageDef, KeywordSubstitute | None]:
    """The stage as this server runs it: the plan's, or in a rehearsal the keyword substitute the probes
    chose (the plan's stage minus what the server lacks; said loudly in the record)."""
    kw_sub = keyword_substitute(stage, mode, decision, version)
    if kw_sub is not None:
        stage = replace(
            stage,
            fields=tuple({k: v for k, v in f.items() if k != "stem"} for f in stage.fields),
            params={k: v for k, v in stage.params.items() if k != "stopwords"},
        )
    return stage, kw_sub


def _stage_record(stage: StageDef, mode: Mode, server: TypesenseServer) -> dict[str, Any]:
    """The start of the result record: what ran, where, and the tie rules."""
    return {
        "stage": stage.id,
        "mode": mode,
        "server_version": server.version,
        "server_url": server.url,
        "image": TYPESENSE_IMAGE if mode == "measurement" else None,
        "corpus": stage.corpus,
        "kind": stage.kind,
        "import_order": IMPORT_ORDER,
        "tie_rule_first_stage": stage.tie_rule,
        "tie_rule_ranking": TIE_RULE,
        "features_needed": list(stage.features),
        "notes": list(stage.notes),
        "query_text": "each topic sent verbatim as q (Typesense syntax applies: double quotes = phrase)",
    }


def _stopwords_record(stage: StageDef, kw_sub: KeywordSubstitute | None, sw: StopwordSet) -> dict[str, Any]:
    return {
        "applied": stage.stopwords,
        "id": STOPWORD_SET_ID if stage.stopwords and kw_sub is None else None,
        "applied_by": ("client (rehearsal substitute)" if kw_sub is not None else "server")
        if stage.stopwords
        else None,
        **sw.record(),
    }


def _substitute_queries(
    record: dict[str, Any],
    stage: StageDef,
    kw_sub: KeywordSubstitute,
    sw: StopwordSet,
    queries: Mapping[str, str],
    mode: Mode,
    version: str,
) -> dict[str, str]:
    """The keyword substitute's queries (the plan's stop set removed on the client), said in the record."""
    stripped = {q: rehearsal_strip_stopwords(text, sw, mode=mode) for q, text in queries.items()}
    empty = sorted(q for q, text in stripped.items() if not text)
    record["substitute"] = {
        "kind": "keyword",
        "label": kw_sub.label,
        "features_dropped": list(KEYWORD_SUBSTITUTE_DROPS),
        "queries_empty_after_stopwords": empty,
    }
    record["query_text"] = (
        "each topic with the plan's stop set removed on the client (rehearsal substitute), sent as q"
    )
    record["notes"].append(
        f"REHEARSAL SUBSTITUTE: Typesense {version} lacks field stem and stop-word sets (26.0); "
        f"the rehearsal ran {stage.id} as {kw_sub.label}. The study runs the plan's settings on "
        "Typesense 30.2."
    )
    return stripped


def _hyphen_queries(
    record: dict[str, Any], stage: StageDef, decision: Decision, queries: Mapping[str, str]
) -> Mapping[str, str]:
    """The hyphen rule (``ph.RULE``), recorded in every stage: applied to the q of a German stage when a
    hyphen probe failed on this server (``probes.hyphen_rewrite``), never to embedded or reranked text."""
    german = "locale" in stage.features
    applied = german and decision.hyphen_rewrite
    record["hyphens"] = {
        "rule": ph.RULE,
        "stage_is_german": german,
        "applied": applied,
        "decided_by": "the probes hyphen and hyphen-hybrid (under probes)",
        "queries_with_hyphen_inside_a_word": ph.hyphenated(queries),
    }
    if not applied:
        return queries
    record["query_text"] += "; a hyphen inside a word replaced by a space (a hyphen probe failed)"
    record["notes"].append(
        f"HYPHENS: a hyphen probe failed on Typesense {record['server_version']}; {stage.id} sent "
        f"{len(record['hyphens']['queries_with_hyphen_inside_a_word'])} queries with the hyphen inside a "
        'word replaced by a space (DEVIATIONS.md, "Hyphens inside query words").'
    )
    return {q: ph.rewrite(t) for q, t in queries.items()}


@dataclass(frozen=True)
class _Vectors:
    """A vector stage's corpus: the passages in order, their positions and vectors, the exact substitute
    a rehearsal may fall back on, and the import's document builder."""

    passages: list[Passage]
    position: dict[str, int]
    matrix: np.ndarray
    exact_sub: ExactSubstitute | None
    build: Callable[[list[Passage], int], list[dict[str, Any]]]


def _embed_passages(
    stage: StageDef, cached: CachedEmbeddings, corpus: Iterable[Passage], decision: Decision
) -> _Vectors:
    seq = list(corpus)
    position = {p.docid: i for i, p in enumerate(seq)}
    exact_sub = None
    if decision.exact_substitute:  # a rehearsal whose ef probe failed and flat_search_cutoff probe passed
        exact_sub = ExactSubstitute.for_corpus(len(seq))  # used only if the server default misses
    matrix = _embed_corpus(cached, seq)
    flag = exact_sub is not None

    def build(batch: list[Passage], start: int) -> list[dict[str, Any]]:
        # float64 rows, one batch at a time: the import body then holds the very values ``.tolist()``
        # gave (bench.firststage.collection.import_body) without a float64 copy of the whole matrix
        rows = np.ascontiguousarray(matrix[start : start + len(batch)], dtype=np.float64)
        docs = []
        for row, p in zip(rows, batch, strict=True):
            d: dict[str, Any] = text_doc(p) if stage.fields else {"id": p.docid}
            d["embedding"] = row
            if flag:
                d[EXACT_FILTER_FIELD] = 1
            docs.append(d)
        return docs

    return _Vectors(seq, position, matrix, exact_sub, build)


def _tune_ef(
    record: dict[str, Any],
    server: TypesenseServer,
    stage: StageDef,
    cached: CachedEmbeddings,
    queries: Mapping[str, str],
    vectors: _Vectors,
    ef_target: float | None,
    decision: Decision,
) -> tuple[dict[str, np.ndarray], int | None, ExactSubstitute | None]:
    """Embed the queries and choose ef by the plan's overlap rule against exact search; returns the query
    vectors, ef and the exact substitute when the rehearsal fell back on it (else None)."""
    qids = list(queries)
    qmat = cached.embed([queries[q] for q in qids], prompt=EMBEDDING_QUERY_PROMPT)
    qvecs = dict(zip(qids, qmat, strict=True))
    record["embeddings"] = cached.record(EMBEDDING_QUERY_PROMPT)
    record["embeddings"]["computed_now"] = cached.computed
    position, sub = vectors.position, vectors.exact_sub
    order = sorted(position, key=position.__getitem__)
    exact = [[order[i] for i in row] for row in exact_top_k(qmat, vectors.matrix, FIRST_STAGE_DEPTH)]
    choice: EfChoice = choose_ef(
        stage.id,
        server.version,
        lambda e: vector_top_ids(server, stage, qvecs, e, position),
        exact,
        target=ef_target if ef_target is not None else EF_MIN_OVERLAP,
        send_ef=decision.send_ef,
        exact_substitute=(
            (sub.label, lambda: vector_top_ids(server, stage, qvecs, None, position, sub))
            if sub is not None
            else None
        ),
    )
    record["ef"] = choice.record()
    if choice.substitute is None:
        return qvecs, choice.ef, None
    record["notes"].append(
        f"REHEARSAL SUBSTITUTE: Typesense {server.version} lacks ef (26.0) and its default HNSW "
        f"search reached a top-100 overlap of {choice.steps[0]['overlap']:.4f} < "
        f"{EF_MIN_OVERLAP}; the rehearsal used {choice.substitute} instead "
        f"(overlap {choice.overlap:.4f}). The study uses HNSW with ef raised by the plan's rule "
        "on Typesense 30.2."
    )
    return qvecs, choice.ef, sub


def _search_record(
    record: dict[str, Any], stage: StageDef, ef: int | None, exact_sub: ExactSubstitute | None
) -> None:
    record["search_params"] = {k: v for k, v in stage.params.items()}
    if exact_sub is not None:
        record["search_params"]["filter_by"] = exact_sub.filter_by
    if stage.vector:
        record["vector_query_options"] = vector_options(stage, ef, exact_sub)
        record["hnsw_params"] = "server default (not sent; the plan fixes none)"
        record["hnsw_note"] = "graph built by the server at import; the overlap is measured on this build"


def _metrics_record(run: dict[str, list[tuple[str, float]]], qrels_path: Path) -> dict[str, Any]:
    """Recall@100 and the ceiling of the run against the qrels, with the qrels file and the missing-query
    policy."""
    qrels = read_qrels(qrels_path)
    return {
        "metrics": mean_scores(qrels, run, measures=["recall@100", "ceiling"]),
        "qrels": {"path": str(qrels_path), "sha256": sha256_file(qrels_path)},
        "missing_query_policy": MISSING_QUERY_POLICY,
    }


def _write_outputs(
    run: dict[str, list[tuple[str, float]]],
    record: dict[str, Any],
    stage_id: str,
    out_run: Path,
    out_json: Path,
) -> None:
    """The run file, then the record naming its SHA-256; a record that cannot be written takes the run file
    with it (a run file without its record never looks complete)."""
    out_json.unlink(missing_ok=True)  # a record from an earlier run must never pair with this run file
    write_run(out_run, run, tag=f"first-stage/{stage_id}")
    record["run_file"] = {"path": str(out_run), "sha256": sha256_file(out_run)}
    try:
        write_json_atomic(out_json, record)
    except BaseException:
        out_run.unlink(missing_ok=True)
        raise
