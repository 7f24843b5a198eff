"""``analysis report``: the quality tables of the plan (section "Quality") from run files and qrels.

Writes ``<out>/quality/<stage>.json`` (one per stage) and ``<out>/quality/study.json`` (settings, inputs,
winners): ids and numbers only, full precision, sorted keys, no timestamps, so a rerun on the same inputs is
byte-identical. ``<out>/report.md`` has one table per stage and ``<out>/figures/<stage>.png`` one figure per
stage. Comparisons stay within one stage; numbers from different corpora are never compared (plan section
"Quality").

Marks: a contamination-flagged reranker (or a registered variant of one) carries "†" in every table and
figure; so does the first-stage row of the stages whose passages the flagged embedder Arctic-l-v2.0 embedded
(vector-71k, hybrid-71k; ``stage_flags``). A reranked run that misses queries of its first stage is marked
"incomplete" in its row and "not rated: ..." in the wording (:mod:`analysis.reporting.study`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.core.atomic import built_beside, out_lock, write_bytes_atomic, write_json_atomic
from analysis.core.background import soon
from analysis.core.plan import (
    ALPHA,
    BOOTSTRAP_RESAMPLES,
    CLEARLY_BETTER_POINTS,
    CONFIDENCE,
    EMBEDDING_STAGES,
    MAIN_METRIC,
    RANDOMISATION_RESAMPLES,
    RUN_IDS,
    SEED,
    STANDIN_MARK,
    embedder_note,
    is_standin,
)
from analysis.costs.report import check_missing, compute_costs, write_costs
from analysis.figures.stage import stage_figure, stage_numbers
from analysis.inputs.trec import read_qrels
from analysis.int8.comparison import compare_int8
from analysis.int8.comparison import markdown as int8_markdown
from analysis.int8.rehearsal import int8_rehearsal_section, read_int8_record
from analysis.latency.report import latency_section
from analysis.reporting import judged, pitfalls
from analysis.reporting.codeinfo import code_record_soon, stamp_tree
from analysis.reporting.outdir import check_out_dir
from analysis.reporting.pytrec_check import check_stages
from analysis.reporting.study import (
    RunResult,
    StageFeed,
    StageResult,
    analyse_study,
    default_flags,
    flag_note,
    paired_differences_vs_first,
    run_label,
)
from analysis.reporting.wording import HIT_RATE_NOTE, WORSE_WORDING_NOTE, corpus_of, winner_sentence
from analysis.stats.metrics import MISSING_QUERY_POLICY
from analysis.stats.ranking import TIE_RULE
from analysis.stats.resampling import BOOTSTRAP_PROCEDURE, P_VALUE_CONVENTION, RNG_ALGORITHM

if TYPE_CHECKING:
    from analysis.costs.section import CostInputs

__all__ = ["SETTINGS", "write_report"]

SETTINGS: dict[str, Any] = {
    "seed": SEED,
    "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
    "randomisation_resamples": RANDOMISATION_RESAMPLES,
    "confidence": CONFIDENCE,
    "alpha": ALPHA,
    "rng": RNG_ALGORITHM,
    "bootstrap_procedure": BOOTSTRAP_PROCEDURE,
    "p_value_convention": P_VALUE_CONVENTION,
    "multiple_comparisons": "Holm step-down per stage, depth and comparison family (vs-first-stage, vs-best)",
    "best_model": "highest mean nDCG@10 among the stage's runs at that depth; ties: smallest model id",
    "clearly_better_points": CLEARLY_BETTER_POINTS,
    "worse_wording": WORSE_WORDING_NOTE,
    "tie_rule": TIE_RULE,
    "missing_query_policy": MISSING_QUERY_POLICY,
    "incomplete_runs": "a reranked run missing queries that its first stage holds is not rated: its numbers "
    "are recorded (missing queries score 0) and it stays in its Holm family, but it is never worded better "
    "or worse, never the best model, and no winner is declared at its stage and depth",
    "hit_rates": HIT_RATE_NOTE,
    "main_metric": MAIN_METRIC,
}


def _run_record(r: RunResult, flags: Mapping[str, str], stage_flags: Mapping[str, str]) -> dict[str, Any]:
    note = flag_note(r, flags, stage_flags)
    return {
        "model": r.model,
        "depth": r.depth,
        "run": r.path,
        "sha256": r.sha256,
        "means": r.means,
        "intervals": r.intervals,
        "flagged": note is not None,
        "flag_note": note,
        "queries_present": r.queries_present,
        "queries_missing": list(r.missing),
        "rated": r.not_rated is None,
        "not_rated": r.not_rated,
    }


def stage_record(
    s: StageResult, flags: Mapping[str, str], stage_flags: Mapping[str, str] | None = None
) -> dict[str, Any]:
    sf = stage_flags or {}
    return {
        "stage": s.stage,
        "corpus": corpus_of(s.stage),
        "first_stage": _run_record(s.first_stage, flags, sf),
        "runs": [_run_record(r, flags, sf) for r in s.runs],
        "families": s.families,
        "best": {str(k): v for k, v in s.best.items()},
        "winner": {str(k): (s.best[k] if v else None) for k, v in s.winner.items()},
    }


def _ids(ids: Sequence[str], shown: int = 10) -> str:
    return ", ".join(ids[:shown]) + (f", ... ({len(ids)} in all)" if len(ids) > shown else "")


def _pts(x: float) -> str:
    return f"{100 * x:.1f}"


def _ci(r: RunResult, metric: str) -> str:
    lo, hi = r.intervals[metric]
    return f"[{_pts(lo)}, {_pts(hi)}]"


def _p(x: float) -> str:
    return f"{x:.4f}" if x >= 0.0001 else f"{x:.1e}"


def _stage_markdown(s: StageResult, flags: Mapping[str, str], stage_flags: Mapping[str, str]) -> list[str]:
    f = s.first_stage
    lines = [
        f"## {s.stage} (corpus {corpus_of(s.stage)})",
        "",
        f"First stage: Recall@100 {_pts(f.means['recall@100'])}, ceiling (nDCG@10 of a perfect "
        f"reordering of the top 100) {_pts(f.means['ceiling'])}. Queries without candidates: "
        f"{len(f.missing)} of {f.queries_present + len(f.missing)}"
        + (f" ({_ids(f.missing)}; each scores 0 in every run of this stage)." if f.missing else "."),
        "",
    ]
    comparisons: dict[tuple[str, str | None, int | None], dict[str, Any]] = {}
    for fam in s.families:
        kind = fam["id"].rsplit("/", 1)[1]
        for c in fam["comparisons"]:
            comparisons[(kind, c["model"], c["depth"])] = c
    lines += [
        "| run | nDCG@10 | 95 % CI | nDCG'@10 | Hit@5 ≥ | 95 % CI | Hit@10 ≥ | R@5 | R@10 | R@20 | MRR@10 "
        "| judged@10 | Δ first stage | p Holm | vs first stage | Δ best | p Holm | vs best |",
        "|---|" + "---:|" * 17,
    ]

    def row(r: RunResult) -> str:
        m = r.means
        name = run_label(r, flags, stage_flags)
        cells = [
            name,
            _pts(m["ndcg@10"]),
            _ci(r, "ndcg@10"),
            _pts(m["ndcg'@10"]),
            _pts(m["hit@5"]),
            _ci(r, "hit@5"),
            _pts(m["hit@10"]),
            _pts(m["recall@5"]),
            _pts(m["recall@10"]),
            _pts(m["recall@20"]),
            _pts(m["mrr@10"]),
            _pts(m["judged@10"]),
        ]
        for kind in ("vs-first-stage", "vs-best"):
            c = comparisons.get((kind, r.model, r.depth))
            if c is None:
                cells += ["", "", "best" if kind == "vs-best" and r.model is not None else ""]
            else:
                cells += [f"{100 * c['mean_difference']:+.1f}", _p(c["p_holm"]), c["wording"]]
        return "| " + " | ".join(cells) + " |"

    lines.append(row(f))
    lines += [row(r) for r in s.runs]
    lines.append("")
    for depth in sorted(s.winner, reverse=True):
        best = s.best.get(depth)
        unrated = [r for r in s.runs if r.depth == depth and r.not_rated]
        if unrated:
            sentence = (
                f"No winner at {s.stage}, depth {depth}: "
                + "; ".join(f"{r.model} is {r.not_rated}" for r in unrated)
                + ", so no model can be shown clearly better than every other."
            )
        else:
            sentence = winner_sentence(s.stage, depth, best, s.winner[depth])
        if s.winner[depth] and best is not None and best in flags and "Note:" not in sentence:
            sentence += f" Note: {best} is contamination-flagged ({flags[best]})."
        lines.append(f"- {sentence}")
    lines.append("")
    return lines


def pytrec_section(ctx: ReportContext) -> list[str]:
    """Plan check 2 on one run per stage; the verdict goes into study.json (``plan_check_2``)."""
    started = ctx.options.get("plan_check_2")  # started once the best models were chosen (write_report)
    verdict = (
        started.result() if started is not None else check_stages(ctx.runs_dir, ctx.qrels_path, ctx.stages)
    )
    ctx.study["plan_check_2"] = verdict
    return [*verdict_lines(verdict), ""]


def verdict_lines(verdict: Mapping[str, Any]) -> list[str]:
    head = (
        f"Plan check 2 (our nDCG@10 against pytrec_eval ndcg_cut_10, tolerance {verdict['tolerance']}, "
        "rank-faithful and, on queries without tied scores, in pytrec_eval's own ordering): "
    )
    if verdict["passed"] is None:
        return [head + f"NOT RUN: {verdict['not_run']}"]
    lines = [head + _verdict_word(verdict)]
    for c in verdict["runs"]:
        own = (
            f"own ordering largest difference {c['own_order_max_abs_diff']:.1e} on "
            f"{c['own_order_queries']} queries"
            if c["own_order_checked"]
            else "own ordering not compared"
        )
        own += f" ({c['queries_with_ties']} queries with tied scores left out)"
        lines.append(
            f"- {c['run']}: {_verdict_word(c)}, largest per-query difference "
            f"{c['max_abs_diff']:.1e} (query {c['worst_qid']}), {own}"
        )
    if "NOT COMPARED" in {_verdict_word(c) for c in verdict["runs"]}:
        lines.append(
            "NOT COMPARED: no query of that run could be compared in pytrec_eval's own order (every "
            "one has tied scores); how its rows were ordered was not checked, so the check did not "
            "pass"
        )
    return lines


def _verdict_word(record: Mapping[str, Any]) -> str:
    """PASS, FAIL or NOT COMPARED; an older study.json has no ``verdict``: from ``passed``."""
    word = record.get("verdict")
    return str(word) if word else ("PASS" if record["passed"] else "FAIL")


@dataclass
class ReportContext:
    """What a report section sees. Files go under ``build_dir`` (swapped into ``--out`` at the end, whole)."""

    runs_dir: Path
    qrels_path: Path
    build_dir: Path
    stages: list[StageResult]
    inputs: dict[str, Any]
    flags: Mapping[str, str]
    stage_flags: Mapping[str, str]
    study: dict[str, Any]  # quality/study.json, written after every section ran: a section may add a key
    options: Mapping[str, Any]  # write_report(section_options=...): inputs a section needs (e.g. a folder)


@dataclass(frozen=True)
class Section:
    """A report section: ``write`` returns the Markdown lines appended to report.md. ``entries``: the
    top-level names it writes under ``--out`` (removed from an earlier report when not produced again)."""

    name: str
    entries: tuple[str, ...]
    write: Callable[[ReportContext], list[str]]


# Sections after the quality tables, in this order. Add one in one line: Section(name, entries, writer).
def _latency(context: ReportContext) -> list[str]:
    """The latency section (plan section "Latency") when a latency folder was given (``--latency``)."""
    folder = context.options.get("latency_dir")
    if folder is None:
        return []
    return latency_section(folder, context.build_dir, figures=bool(context.options.get("figures", True)))


def _rehearsal_int8(context: ReportContext) -> list[str]:
    """The rehearsal's int8 step on its stand-in when a rehearsal passes its ``int8.json``
    (``section_options={"int8_record": path}``)."""
    path = context.options.get("int8_record")
    if path is None:
        return []
    return int8_rehearsal_section(read_int8_record(Path(path)))


def _costs(context: ReportContext) -> list[str]:
    """The costs section (plan section "Costs") when cost inputs were given (``--prices``); computed in
    ``write_report`` before anything is written."""
    record = context.options.get("costs_record")
    if record is None:
        return []
    quality = {s.stage: stage_record(s, context.flags, context.stage_flags) for s in context.stages}
    return write_costs(record, quality, context.build_dir, figures=bool(context.options.get("figures", True)))


def _pitfalls(context: ReportContext) -> list[str]:
    """The pitfalls experiment (its own comparison family) when ``<out>/pitfalls/runs`` holds variant runs."""
    out = context.options["out_dir"]  # the variant runs live in the real --out folder
    return pitfalls.report_section(context.runs_dir, read_qrels(context.qrels_path), out, context.build_dir)


def _judged(context: ReportContext) -> list[str]:
    """The judged sample when ``<out>/judged/labels.json`` is published."""
    return judged.report_section(context.options["out_dir"], context.build_dir)


def _int8(context: ReportContext) -> list[str]:
    """The OpenVINO int8 variant against fp32 (its own comparison, outside the Holm families) when
    ``<runs>/hybrid-71k/bge-v2-m3-int8@100.trec`` exists."""
    record = compare_int8(context.runs_dir, context.qrels_path)
    if record is None:
        return []
    # a top-level file, not results/int8/ (bench int8 keeps its calibration set there; the report owns
    # only what it writes)
    write_json_atomic(context.build_dir / "int8-quality.json", record)
    return int8_markdown(record)


SECTIONS: list[Section] = [
    Section("plan check 2", (), pytrec_section),
    Section("latency", ("latency-summary",), _latency),
    Section("rehearsal int8", (), _rehearsal_int8),
    Section("costs", ("costs.json",), _costs),
    Section("pitfalls", ("pitfalls.json",), _pitfalls),
    Section("judged", ("judged.json",), _judged),
    Section("int8", ("int8-quality.json",), _int8),
]
REPORT_ENTRIES = ("quality", "figures", "report.md")  # what the quality part writes under --out
OWNED = (*REPORT_ENTRIES, *(e for sec in SECTIONS for e in sec.entries))  # every entry a report writes
# The owned folders and the one kind of file the report writes in each (analysis.reporting.outdir: anything
# else there is refused by name, never deleted); every other owned entry is a file.
OWNED_FOLDERS = {"quality": ".json", "figures": ".png", "latency-summary": ".json"}


def write_report(
    runs_dir: Path,
    qrels_path: Path,
    out_dir: Path,
    *,
    title: str | None = None,
    header_lines: Sequence[str] = (),
    flags: Mapping[str, str] | None = None,
    figures: bool = True,
    stage_flags: Mapping[str, str] | None = None,
    section_options: Mapping[str, Any] | None = None,
    costs: CostInputs | None = None,
    latency_dir: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> Path:
    """Analyse the runs under ``runs_dir`` and write JSON, Markdown and figures; returns report.md's path.

    Everything is built in a temporary folder beside ``out_dir`` and swapped in at the end
    (:func:`analysis.core.atomic.built_beside`): on any failure the earlier report stays as it was, and files
    of an earlier report that this one does not write (a stage no longer present) are gone afterwards. Before
    anything is read, :func:`analysis.reporting.outdir.check_out_dir` refuses an ``out_dir`` where that would
    lose a file the report did not write, or where the report would write into its own inputs.

    ``flags`` (model id -> note) is added to the plan's contamination flags. ``stage_flags`` (stage -> note)
    marks first stages; default: the plan's embedder flag on vector-71k and hybrid-71k (the rehearsal, whose
    embedder is a stand-in, passes its own).

    ``warn`` gets each warning line (``analysis report`` prints them): the leftovers of an interrupted report
    that were cleaned (printed to stderr without ``warn``), and the entries of an earlier report that this one
    drops (costs.json without ``--prices``; also said in report.md).
    """
    runs_dir, qrels_path, out_dir = Path(runs_dir), Path(qrels_path), Path(out_dir)
    with out_lock(out_dir) as recovered:  # one report into --out at a time (analysis.core.atomic.out_lock)
        for line in recovered:
            if warn is not None:
                warn(line)
            else:
                print(f"Warning: {line}", file=sys.stderr)
        options = {**(section_options or {}), "warn": warn}
        return _write_report_locked(
            runs_dir,
            qrels_path,
            out_dir,
            title=title,
            header_lines=header_lines,
            flags=flags,
            figures=figures,
            stage_flags=stage_flags,
            section_options=options,
            costs=costs,
            latency_dir=latency_dir,
        )


def _write_report_locked(
    runs_dir: Path,
    qrels_path: Path,
    out_dir: Path,
    *,
    title: str | None,
    header_lines: Sequence[str],
    flags: Mapping[str, str] | None,
    figures: bool,
    stage_flags: Mapping[str, str] | None,
    section_options: Mapping[str, Any] | None,
    costs: CostInputs | None,
    latency_dir: Path | None,
) -> Path:
    check_out_dir(
        out_dir,
        folder_files={e: OWNED_FOLDERS[e] for e in OWNED if e in OWNED_FOLDERS},
        files=tuple(e for e in OWNED if e not in OWNED_FOLDERS),
        inputs={"--runs": runs_dir, "--qrels": qrels_path, "--latency": latency_dir},
    )
    record = code_record_soon()  # made while the runs are read
    checks: dict[str, Future[dict[str, Any]]] = {}

    def start_check(stages: StageFeed) -> None:  # each stage as soon as its runs are scored
        checks["plan_check_2"] = soon(
            "plan-check-2", check_stages, runs_dir, qrels_path, stages, stages.judgments
        )

    stages, inputs = analyse_study(runs_dir, qrels_path, best_chosen=start_check)
    _write_analysed(
        runs_dir,
        qrels_path,
        out_dir,
        stages,
        inputs,
        {**(section_options or {}), **checks},
        record,
        title=title,
        header_lines=header_lines,
        flags=flags,
        figures=figures,
        stage_flags=stage_flags,
        costs=costs,
        latency_dir=latency_dir,
    )
    return out_dir / "report.md"


def _write_analysed(
    runs_dir: Path,
    qrels_path: Path,
    out_dir: Path,
    stages: list[StageResult],
    inputs: dict[str, Any],
    section_options: Mapping[str, Any],
    record: Future[dict[str, Any]],
    *,
    title: str | None,
    header_lines: Sequence[str],
    flags: Mapping[str, str] | None,
    figures: bool,
    stage_flags: Mapping[str, str] | None,
    costs: CostInputs | None,
    latency_dir: Path | None,
) -> None:
    all_flags = {**default_flags(), **(flags or {})}
    if stage_flags is None:
        stage_flags = {s: embedder_note() for s in EMBEDDING_STAGES}
    costs_record = None
    if costs is not None:  # computed before anything is written: bad cost input leaves no half-written report
        records = {s.stage: stage_record(s, all_flags, stage_flags) for s in stages}
        costs_record = compute_costs(records, stages, qrels_path, costs)
    options = {
        **(section_options or {}),
        "figures": figures,
        "latency_dir": latency_dir,
        "costs_record": costs_record,
        "out_dir": out_dir,
    }
    with built_beside(out_dir, OWNED) as build:
        _write_quality(
            runs_dir,
            qrels_path,
            build,
            stages,
            inputs,
            all_flags,
            stage_flags,
            title=title,
            header_lines=header_lines,
            figures=figures,
            options=options,
        )
        # every file names the code that wrote it (analysis.reporting.codeinfo)
        stamp_tree(build, record.result())
    if costs_record is not None:
        check_missing(costs_record)  # after writing: the cells say "price missing"; exit 1 unless allowed


def _dropped_entries(out_dir: Path, build: Path, warn: Callable[[str], None] | None) -> list[str]:
    """The entries of an earlier report in ``out_dir`` (costs.json, latency-summary/, ...) that this report
    does not write, so the swap removes them; said aloud (a warning line each, and a line of report.md): a
    rerun without ``--prices`` or ``--latency`` drops them. Not a key of study.json: ``bench audit``
    recomputes the report without the prices and compares study.json byte for byte."""
    sections = [e for sec in SECTIONS for e in sec.entries]
    dropped = [
        e
        for e in sections
        if ((out_dir / e).exists() or (out_dir / e).is_symlink()) and not (build / e).exists()
    ]
    for entry in dropped:
        if warn is not None:
            warn(
                f"{out_dir / entry}: an earlier report's {entry} that this report does not write (no "
                "--prices / --latency / input for it this time) is removed with the swap; pass its inputs "
                "again to keep it"
            )
    return dropped


def _intro_markdown(inputs: Mapping[str, Any], title: str | None, header_lines: Sequence[str]) -> list[str]:
    """The title, the header lines and the paragraphs on method, wording and corpora."""
    md = [f"# {title or 'Quality of German rerankers on MIRACL-de'}", "", *header_lines]
    if header_lines:
        md.append("")
    md += [
        f"{inputs['queries']} queries (every qrels query; a query missing from a run scores 0). nDCG@10 and "
        "the other metrics in points (x 100). 95 % bootstrap percentile intervals "
        f"({BOOTSTRAP_RESAMPLES:,} resamples over queries, seed {SEED}); paired randomisation test "
        f"({RANDOMISATION_RESAMPLES:,} sign flips, seed {SEED}) on nDCG@10; Holm per stage, depth and "
        "family; "
        f"alpha {ALPHA}. Wording: clearly better = significant and >= {CLEARLY_BETTER_POINTS} points; "
        "measurably better = significant, smaller; otherwise on par. " + WORSE_WORDING_NOTE,
        "",
        f"{HIT_RATE_NOTE} Numbers from different corpora are never compared directly (plan): every "
        "comparison below is within one stage, and stages of different corpora (71k, full) are never set "
        "against each other.",
        "",
        "The comparisons against the best model follow the plan, but the best model is picked on the same "
        "queries, so that family's error rate under the null exceeds alpha (`analysis simulate` measures "
        "it); the family against the first stage is not affected.",
        "",
    ]
    return md


def _marks_markdown(
    stages: list[StageResult], all_flags: Mapping[str, str], stage_flags: Mapping[str, str]
) -> list[str]:
    """The contamination flags, the declared stand-ins and the incomplete runs, each a paragraph."""
    md: list[str] = []
    marked = [
        f"{m}: {n}" for m, n in sorted(all_flags.items()) if any(r.model == m for s in stages for r in s.runs)
    ]
    marked += [
        f"first stage of {st}: {stage_flags[st]}"
        for st in sorted(stage_flags)
        if any(s.stage == st for s in stages)
    ]
    if marked:
        md.append("† contamination-flagged: " + "; ".join(marked))
        md.append("")
    standins = sorted({r.model for s in stages for r in s.runs if r.model and is_standin(r.model)})
    if standins:
        md.append(
            f"{STANDIN_MARK} declared rehearsal stand-in, not a plan model: "
            + "; ".join(f"{m} ({RUN_IDS[m].what})" for m in standins)
        )
        md.append("")
    incomplete = [
        f"{s.stage}/{r.model}@{r.depth}: {r.not_rated} ({_ids(r.missing)})"
        for s in stages
        for r in s.runs
        if r.not_rated
    ]
    if incomplete:
        md.append(
            "Incomplete runs (a query missing from a run scores 0) are marked in their row and not "
            "rated: " + "; ".join(incomplete)
        )
        md.append("")
    return md


def _write_quality(
    runs_dir: Path,
    qrels_path: Path,
    out_dir: Path,
    stages: list[StageResult],
    inputs: dict[str, Any],
    all_flags: Mapping[str, str],
    stage_flags: Mapping[str, str],
    *,
    title: str | None,
    header_lines: Sequence[str],
    figures: bool,
    options: Mapping[str, Any],
) -> None:
    records = {s.stage: stage_record(s, all_flags, stage_flags) for s in stages}
    for stage, rec in records.items():
        write_json_atomic(out_dir / "quality" / f"{stage}.json", rec)
    study = {
        "settings": SETTINGS,
        "inputs": inputs,
        "stages": sorted(records),
        "flags": {m: all_flags[m] for m in sorted(all_flags)},
        "first_stage_flags": {s: stage_flags[s] for s in sorted(stage_flags)},
        "winners": {s: r["winner"] for s, r in records.items()},
    }

    md = _intro_markdown(inputs, title, header_lines)
    md += _marks_markdown(stages, all_flags, stage_flags)
    for s in stages:
        md += _stage_markdown(s, all_flags, stage_flags)
        if figures:
            md += [f"![nDCG@10 at {s.stage}](figures/{s.stage}.png)", ""]
    if figures:
        for s in stages:
            data = stage_numbers(s, paired_differences_vs_first(s), all_flags, stage_flags)
            stage_figure(data, out_dir / "figures" / f"{s.stage}.png")
    context = ReportContext(
        runs_dir, qrels_path, out_dir, stages, inputs, all_flags, stage_flags, study, options
    )
    for section in SECTIONS:
        md += section.write(context)
    dropped = _dropped_entries(options["out_dir"], out_dir, options.get("warn"))
    if dropped:
        md += [
            "Removed from the earlier report in this folder (not produced by this one): "
            + ", ".join(dropped),
            "",
        ]
    write_json_atomic(out_dir / "quality" / "study.json", study)
    write_bytes_atomic(out_dir / "report.md", ("\n".join(md).rstrip() + "\n").encode("utf-8"))
