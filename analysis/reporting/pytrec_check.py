"""Plan check 2 (section "Adapter checks"): our nDCG@10 equals pytrec_eval ``ndcg_cut_10`` within 0.0001.

Two comparisons, both required to pass where they apply:

* **rank-faithful** (always): pytrec_eval (trec_eval) re-sorts every run by score and breaks score ties by
  docid *descending*, whereas the plan breaks ties by first-stage rank. So that both evaluate the same order,
  pytrec_eval receives the run with its scores replaced by ``-rank``. This checks the metric.
* **pytrec_eval's own ordering** (on every query without tied scores): pytrec_eval receives the run's own
  scores and orders it itself. Without ties its order is the only order the scores allow, so any difference
  shows a bug in how our reader ordered the rows (rank against score) or in the tie rule. On a query with
  ties the orders may legitimately differ (trec_eval breaks ties by docid), so such queries are left out of
  this comparison and counted.

Both hand pytrec_eval only the rows that can stand among the first 10 of its order (:func:`_within_cutoff`):
``ndcg_cut_10`` reads nothing after them, so its values are those of the whole run (tested against pytrec_eval
on whole runs), at a tenth of the work. Queries of the qrels missing from the run count 0 on both sides
(``trec_eval -c``). ``analysis report`` runs the check on one run per stage (:func:`check_stages`) and writes
the verdict into ``quality/study.json``; ``bench quality`` calls :func:`compare_with_pytrec_eval`. Which run
and both orderings: deviation D-015.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.core.floatsum import ltr_sum
from analysis.core.plan import PYTREC_EVAL_TOLERANCE, QUALITY_DEPTH
from analysis.inputs.trec import RunTable, read_qrels, read_run_table
from analysis.stats.metrics import Judgments, evaluate_table
from analysis.stats.ties import row_queries, tied_query_mask

if TYPE_CHECKING:
    from analysis.reporting.study import RunResult, StageResult

__all__ = ["PytrecComparison", "check_stages", "checked_run", "compare_with_pytrec_eval", "pytrec_ndcg10"]

RunLike = RunTable | Mapping[str, Sequence[tuple[str, float]]]


@dataclass(frozen=True)
class PytrecComparison:
    queries: int
    ours: float
    pytrec_eval: float  # on rank-faithful scores (same order as ours)
    pytrec_eval_raw: float  # on the run's own scores, ordered by pytrec_eval (ties: docid descending)
    max_abs_diff: float  # largest per-query |ours - pytrec_eval| (rank-faithful)
    worst_qid: str | None
    queries_with_ties: int
    own_order_max_abs_diff: float  # largest |ours - pytrec_eval_raw| over the queries without tied scores
    own_order_worst_qid: str | None
    own_order_queries: int  # qrels queries compared in pytrec_eval's own ordering (no tied scores)
    tolerance: float = PYTREC_EVAL_TOLERANCE
    # queries of the run (and the qrels) without tied scores: those compared in pytrec_eval's own order with
    # passages in them (a query missing from the run is 0 on both sides whatever the order). Not written to
    # quality/study.json (see as_dict): the verdict of `analysis check-pytrec` only.
    own_order_run_queries: int | None = None

    @property
    def own_order_checked(self) -> bool:
        """pytrec_eval's own ordering was compared on at least one query of the run (without tied scores);
        a query missing from the run is 0 on both sides whatever the order, so it compares nothing."""
        if self.own_order_run_queries is not None:
            return self.own_order_run_queries > 0
        return self.own_order_queries > 0

    @property
    def passed(self) -> bool:
        tol = self.tolerance
        faithful = self.max_abs_diff <= tol and abs(self.ours - self.pytrec_eval) <= tol
        own = not self.own_order_checked or self.own_order_max_abs_diff <= tol
        return faithful and own

    @property
    def verdict(self) -> str:
        """PASS, FAIL, or NOT COMPARED: the rank-faithful comparison passed, but no query of the run could be
        compared in pytrec_eval's own order (every one has tied scores), so how the reader ordered the rows
        was not checked against pytrec_eval."""
        if not self.passed:
            return "FAIL"
        return "NOT COMPARED" if self.own_order_run_queries == 0 else "PASS"

    def as_dict(self) -> dict[str, Any]:
        """The record in study.json: ``passed`` is true only for PASS, so a run compared in neither order
        that pytrec_eval's own ordering could check never reads as passed (``verdict`` says which)."""
        out = {
            **asdict(self),
            "own_order_checked": self.own_order_checked,
            "passed": self.verdict == "PASS",
            "verdict": self.verdict,
        }
        del out["own_order_run_queries"]  # study.json keeps its keys (the golden report)
        return out


def _import_pytrec_eval() -> Any:
    try:
        # lazy: optional C extension: its absence is reported below
        import pytrec_eval
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "plan check 2 needs pytrec_eval, which is not installed; install the project's dependencies with "
            "`uv sync` (package pytrec-eval-terrier)"
        ) from exc
    return pytrec_eval


def _as_table(run: RunLike) -> RunTable:
    if isinstance(run, RunTable):
        return run
    qids = tuple(sorted(run))
    counts = [len(run[q]) for q in qids]
    offsets = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    docids = tuple(d for q in qids for d, _ in run[q])
    scores = np.array([s for q in qids for _, s in run[q]], dtype=np.float64)
    return RunTable(qids, offsets, docids, scores)


CUTOFF = 10  # ndcg_cut_10 reads the first 10 rows of pytrec_eval's order and nothing after them


def _within_cutoff(table: RunTable, rank_faithful: bool) -> np.ndarray:
    """The rows (bool) that can stand among the first :data:`CUTOFF` of pytrec_eval's order; the rest cannot
    change ``ndcg_cut_10`` (its ideal gain comes from the qrels), so they are not handed over.
    Rank-faithful scores (``-rank``): each query's first rows. The run's own scores: every row whose score, as
    pytrec_eval holds it (float32, :mod:`analysis.stats.ties`), is at least its query's tenth highest, so that
    rows tied with the tenth stay and pytrec_eval's tie rule (docid descending) chooses among them as before.
    """
    sizes = np.diff(table.offsets)
    if rank_faithful:
        position = np.arange(len(table.scores), dtype=np.int64) - np.repeat(table.offsets[:-1], sizes)
        keep: np.ndarray = position < CUTOFF
        return keep
    row_q = row_queries(table)
    s32 = table.scores.astype(np.float32)
    if np.any((row_q[1:] == row_q[:-1]) & (s32[1:] > s32[:-1])):
        descending = np.lexsort((-s32, row_q))  # each query's scores, highest first
    else:  # the readers' tables: scores never rise within a query (nor do they once rounded to float32)
        descending = np.arange(len(s32))
    tenth = np.full(len(sizes), -np.inf, dtype=np.float32)
    deep = np.flatnonzero(sizes > CUTOFF)
    tenth[deep] = s32[descending[table.offsets[deep] + CUTOFF - 1]]
    keep = s32 >= tenth[row_q]
    return keep


def _scored(table: RunTable, rank_faithful: bool) -> dict[str, dict[str, float]]:
    """pytrec_eval's run: per query, docid -> score (``-rank`` when ``rank_faithful``), for the rows of
    :func:`_within_cutoff` (in the table's order)."""
    out: dict[str, dict[str, float]] = {}
    kept = np.flatnonzero(_within_cutoff(table, rank_faithful))
    bounds = np.searchsorted(kept, table.offsets).tolist()
    rows = kept.tolist()
    # rank-faithful: the score of a row is -(its position in the query): 0.0, -1.0, ...
    positions = kept - np.repeat(table.offsets[:-1], np.diff(bounds))
    values = ((-positions).astype(np.float64) if rank_faithful else table.scores[kept]).tolist()
    docids = table.docids
    for i, q in enumerate(table.qids):
        a, b = bounds[i], bounds[i + 1]
        if b == a:
            continue
        out[q] = dict(zip([docids[r] for r in rows[a:b]], values[a:b], strict=True))
    return out


def _evaluator(qrels: Mapping[str, Mapping[str, int]]) -> Any:
    pytrec_eval = _import_pytrec_eval()
    return pytrec_eval.RelevanceEvaluator({q: dict(v) for q, v in qrels.items()}, {"ndcg_cut_10"})


def pytrec_ndcg10(
    qrels: Mapping[str, Mapping[str, int]],
    run: RunLike,
    *,
    rank_faithful: bool = True,
    evaluator: Any = None,
) -> dict[str, float]:
    """pytrec_eval ``ndcg_cut_10`` per qrels query (0 for queries missing from the run). ``evaluator``: a
    ``RelevanceEvaluator`` of ``qrels`` for ``ndcg_cut_10`` to reuse (made here if None)."""
    evaluator = evaluator if evaluator is not None else _evaluator(qrels)
    result = evaluator.evaluate(_scored(_as_table(run), rank_faithful))
    return {q: float(result[q]["ndcg_cut_10"]) if q in result else 0.0 for q in qrels}


def _tied_queries(table: RunTable) -> set[str]:
    """Queries with at least two scores equal as pytrec_eval compares them (float32;
    :mod:`analysis.stats.ties`),
    anywhere in the query, whatever the row order."""
    return {table.qids[i] for i in np.flatnonzero(tied_query_mask(table)).tolist()}


def _worst(ours: Mapping[str, float], theirs: Mapping[str, float]) -> tuple[float, str | None]:
    diffs = {q: abs(ours[q] - theirs[q]) for q in ours}
    worst = max(diffs, key=lambda q: diffs[q]) if diffs else None
    return (diffs[worst] if worst is not None else 0.0), worst


def compare_with_pytrec_eval(
    qrels: Mapping[str, Mapping[str, int]],
    run: RunLike,
    *,
    judgments: Judgments | None = None,
    evaluator: Any = None,
) -> PytrecComparison:
    """Plan check 2 on one run (a mapping qid -> [(docid, score)] in rank order, or a :class:`RunTable`).
    ``judgments``: ``Judgments.from_qrels(qrels)`` if the caller has it already; ``evaluator``: pytrec_eval's
    evaluator of ``qrels`` (see :func:`pytrec_ndcg10`)."""
    table = _as_table(run)
    judgments = judgments or Judgments.from_qrels(qrels)
    ours = dict(
        zip(judgments.qids, evaluate_table(judgments, table, ["ndcg@10"])["ndcg@10"].tolist(), strict=True)
    )
    evaluator = evaluator if evaluator is not None else _evaluator(qrels)
    theirs = pytrec_ndcg10(qrels, table, evaluator=evaluator)
    raw = pytrec_ndcg10(qrels, table, rank_faithful=False, evaluator=evaluator)
    n = len(qrels)
    max_diff, worst = _worst(ours, theirs)
    tied = _tied_queries(table)
    untied = {q: v for q, v in ours.items() if q not in tied}  # a query missing from the run counts too
    own_diff, own_worst = _worst(untied, raw)
    return PytrecComparison(
        queries=n,
        ours=ltr_sum(ours.values()) / n if n else 0.0,
        pytrec_eval=ltr_sum(theirs.values()) / n if n else 0.0,
        pytrec_eval_raw=ltr_sum(raw.values()) / n if n else 0.0,
        max_abs_diff=max_diff,
        worst_qid=worst,
        queries_with_ties=len(tied),
        own_order_max_abs_diff=own_diff,
        own_order_worst_qid=own_worst,
        own_order_queries=len(untied),
        own_order_run_queries=sum(1 for q in table.qids if q in untied),
    )


CHOICE = (
    "one run per stage: the best model's run at depth 100 (else at the deepest depth); a stage without "
    "reranked runs: its first-stage run"
)


def checked_run(stage: StageResult) -> RunResult:
    """The run of a stage that plan check 2 is run on: the best model's run at the plan's main depth (100) or
    else the deepest depth (the run the stage's main claims rest on); a stage without reranked runs: its
    first-stage run."""
    if not stage.best:
        return stage.first_stage
    depth = QUALITY_DEPTH if QUALITY_DEPTH in stage.best else max(stage.best)
    return next(r for r in stage.runs if r.depth == depth and r.model == stage.best[depth])


def check_stages(
    runs_dir: Path, qrels_path: Path, stages: Iterable[StageResult], judgments: Judgments | None = None
) -> dict[str, Any]:
    """Plan check 2 on one run per stage (:func:`checked_run`; ``stages`` may arrive one at a time: a
    :class:`analysis.reporting.study.StageFeed`): the verdict recorded in study.json. ``judgments``: those
    of ``qrels_path`` where the caller has read them already (else they are read here).

    ``passed`` is None (and ``not_run`` says why) only when pytrec_eval cannot be imported."""
    verdict: dict[str, Any] = {
        "tolerance": PYTREC_EVAL_TOLERANCE,
        "reference": "pytrec_eval ndcg_cut_10",
        "choice": CHOICE,
    }
    try:
        _import_pytrec_eval()
    except RuntimeError as exc:
        return {**verdict, "passed": None, "verdict": "NOT RUN", "not_run": str(exc), "runs": []}
    judgments = judgments if judgments is not None else Judgments.from_qrels(read_qrels(qrels_path))
    qrels = judgments.qrels
    evaluator = _evaluator(qrels)  # one for every run (pytrec_eval's evaluate keeps no state between runs)
    results = []
    for s in stages:
        run = checked_run(s)
        table = read_run_table(runs_dir / run.path, qrels_qids=qrels.keys())
        comparison = compare_with_pytrec_eval(qrels, table, judgments=judgments, evaluator=evaluator)
        results.append({"stage": s.stage, "run": run.path, **comparison.as_dict()})
    verdicts = {r["verdict"] for r in results}
    overall = "FAIL" if "FAIL" in verdicts else "NOT COMPARED" if "NOT COMPARED" in verdicts else "PASS"
    return {**verdict, "passed": overall == "PASS", "verdict": overall, "not_run": None, "runs": results}
