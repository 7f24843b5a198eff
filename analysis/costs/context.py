"""The context calculation (PLAN.md, section "Costs").

The smallest k *without* reranker whose Hit@k (and Recall@k) reaches the reranked run's value at k = 5:
passing the first stage's top k to an LLM gives it the same chance of seeing a relevant passage as passing
the reranked top 5. The saved passages (k - 5) x mean passage tokens (Voyage tokenizer, an approximation,
measured by ``bench costs passage-tokens``) x the input price of each reference LLM = the saved LLM input
cost per 1,000 queries, next to the reranker's cost. Answer quality is not measured.

Hit@k and Recall@k follow :mod:`analysis.stats.metrics` (every qrels query counts; a missing query scores 0),
computed here for every k at once; tests check them against ``analysis.stats.metrics.evaluate_table``. Hit is
compared as a count of queries (exact); Recall as a mean with a tolerance of 1e-12 (floating-point sums).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from analysis.inputs.trec import RunTable
from analysis.stats.metrics import Judgments

__all__ = ["Curves", "curves", "saved_eur_per_1000", "smallest_k"]

RECALL_TOLERANCE: Final = 1e-12
NOT_MEASURED: Final = "answer quality is not measured; the calculation counts passages and tokens only"


@dataclass(frozen=True)
class Curves:
    """``hits[k - 1]``: queries with a relevant passage in the top k; ``recall[k - 1]``: mean Recall@k."""

    queries: int
    hits: np.ndarray
    recall: np.ndarray

    def hit_at(self, k: int) -> float:
        return float(self.hits[k - 1]) / self.queries


def curves(judgments: Judgments, table: RunTable, max_k: int) -> Curves:
    """Hit@k counts and mean Recall@k of ``table`` for k = 1..``max_k``."""
    nq = len(judgments.qids)
    index = {q: i for i, q in enumerate(judgments.qids)}
    run_q = np.array([index.get(q, -1) for q in table.qids], dtype=np.int64)
    counts = np.diff(table.offsets)
    row_q = np.repeat(run_q, counts)
    pos = np.arange(len(table.docids), dtype=np.int64) - np.repeat(table.offsets[:-1], counts)
    keep = (row_q >= 0) & (pos < max_k)
    row_q, pos = row_q[keep], pos[keep]
    docids = table.docids if bool(keep.all()) else list(itertools.compress(table.docids, keep.tolist()))
    relevant = judgments.relevance(row_q, docids) > 0
    first = np.full(nq, max_k, dtype=np.int64)
    np.minimum.at(first, row_q[relevant], pos[relevant])
    hits = np.cumsum(np.bincount(first[first < max_k], minlength=max_k))[:max_k]
    weights = np.zeros(int(relevant.sum()))
    nrel = judgments.n_relevant[row_q[relevant]]
    np.divide(1.0, nrel, out=weights, where=nrel > 0)
    recall = np.cumsum(np.bincount(pos[relevant], weights=weights, minlength=max_k))[:max_k] / max(nq, 1)
    return Curves(nq, hits.astype(np.int64), recall)


def smallest_k(first_stage: Curves, reranked: Curves, *, reference_k: int) -> dict[str, Any]:
    """The smallest k at which the first stage reaches the reranked Hit@``reference_k`` and Recall@…, each
    alone and both together; None (with the depth searched) where the first stage never reaches it."""
    target_hits = int(reranked.hits[reference_k - 1])
    target_recall = float(reranked.recall[reference_k - 1])
    reached_hit = np.flatnonzero(first_stage.hits >= target_hits)
    reached_recall = np.flatnonzero(first_stage.recall >= target_recall - RECALL_TOLERANCE)
    k_hit = int(reached_hit[0]) + 1 if reached_hit.size else None
    k_recall = int(reached_recall[0]) + 1 if reached_recall.size else None
    k_both = max(k_hit, k_recall) if k_hit is not None and k_recall is not None else None
    return {
        "reference_k": reference_k,
        "reranked_hit": target_hits / reranked.queries,
        "reranked_recall": target_recall,
        "k_hit": k_hit,
        "k_recall": k_recall,
        "k": k_both,
        "searched_to_k": len(first_stage.hits),
        "saved_passages": None if k_both is None else k_both - reference_k,
    }


def saved_eur_per_1000(
    saved_passages: int, mean_passage_tokens: float, eur_per_million_tokens: float
) -> float:
    """Saved LLM input cost per 1,000 queries: passages x tokens per passage x price."""
    return 1000.0 * saved_passages * mean_passage_tokens * eur_per_million_tokens / 1_000_000
