"""Plan check 2 (section "Adapter checks"): our nDCG@10 equals pytrec_eval ``ndcg_cut_10`` within 0.0001.

pytrec_eval (trec_eval) re-sorts every run by score and breaks score ties by docid *descending*, whereas the
plan breaks ties by first-stage rank. So that both evaluate the same order, pytrec_eval receives the run with
its scores replaced by ``-rank`` (rank-faithful scores). The comparison with pytrec_eval's own tie-breaking
on the original scores is reported as well (``pytrec_eval_raw``); it differs only where a query has tied
scores. Queries of the qrels missing from the run count 0 on both sides (``trec_eval -c``).

pytrec_eval is a development dependency; it is imported only here, only when called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.metrics import evaluate
from analysis.plan import PYTREC_EVAL_TOLERANCE

__all__ = ["PytrecComparison", "compare_with_pytrec_eval"]


@dataclass(frozen=True)
class PytrecComparison:
    queries: int
    ours: float
    pytrec_eval: float  # on rank-faithful scores (same order as ours)
    pytrec_eval_raw: float  # on the run's own scores, ties broken by trec_eval (docid descending)
    max_abs_diff: float
    worst_qid: str | None
    queries_with_ties: int
    tolerance: float = PYTREC_EVAL_TOLERANCE

    @property
    def passed(self) -> bool:
        return self.max_abs_diff <= self.tolerance and abs(self.ours - self.pytrec_eval) <= self.tolerance


def _import_pytrec_eval() -> Any:
    try:
        import pytrec_eval
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "plan check 2 needs pytrec_eval, which is not installed; install the development group with "
            "`uv sync --group dev` (package pytrec-eval-terrier)"
        ) from exc
    return pytrec_eval


def pytrec_ndcg10(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Sequence[tuple[str, float]]], *,
    rank_faithful: bool = True,
) -> dict[str, float]:
    """pytrec_eval ``ndcg_cut_10`` per qrels query (0 for queries missing from the run)."""
    pytrec_eval = _import_pytrec_eval()
    evaluator = pytrec_eval.RelevanceEvaluator({q: dict(v) for q, v in qrels.items()}, {"ndcg_cut_10"})
    if rank_faithful:
        scored = {q: {d: float(-i) for i, (d, _) in enumerate(v)} for q, v in run.items() if v}
    else:
        scored = {q: {d: float(s) for d, s in v} for q, v in run.items() if v}
    result = evaluator.evaluate(scored)
    return {q: float(result[q]["ndcg_cut_10"]) if q in result else 0.0 for q in qrels}


def compare_with_pytrec_eval(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Sequence[tuple[str, float]]]
) -> PytrecComparison:
    ours = evaluate(qrels, run, measures=["ndcg@10"])["ndcg@10"]
    theirs = pytrec_ndcg10(qrels, run)
    raw = pytrec_ndcg10(qrels, run, rank_faithful=False)
    diffs = {q: abs(ours[q] - theirs[q]) for q in qrels}
    worst = max(diffs, key=lambda q: diffs[q]) if diffs else None
    n = len(qrels)
    ties = sum(1 for v in run.values() if len({s for _, s in v}) < len(v))
    return PytrecComparison(
        queries=n,
        ours=sum(ours.values()) / n if n else 0.0,
        pytrec_eval=sum(theirs.values()) / n if n else 0.0,
        pytrec_eval_raw=sum(raw.values()) / n if n else 0.0,
        max_abs_diff=diffs[worst] if worst is not None else 0.0,
        worst_qid=worst,
        queries_with_ties=ties,
    )
