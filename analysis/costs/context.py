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

from typing import Any, Final

import numpy as np

from analysis.inputs.trec import RunTable
from analysis.stats.metrics import Curves, Judgments, curves_table

__all__ = ["Curves", "curves", "saved_eur_per_1000", "smallest_k"]

RECALL_TOLERANCE: Final = 1e-12
NOT_MEASURED: Final = "answer quality is not measured; the calculation counts passages and tokens only"


def curves(judgments: Judgments, table: RunTable, max_k: int) -> Curves:
    """Hit@k counts and mean Recall@k of ``table`` for k = 1..``max_k``
    (:func:`analysis.stats.metrics.curves_table`; the report keeps each run's curves when it reads the run,
    :attr:`analysis.reporting.study.RunResult.curves`)."""
    return curves_table(judgments, table, max_k)


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
