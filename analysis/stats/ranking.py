"""The project's one ranking function and its tie rule (plan section "Rerankers": score ties are broken by
first-stage rank).

trec_eval and pytrec_eval sort by score and break ties by docid descending; mteb sorted by (score, doc_id) in
several places. Here ties keep the order of the input, which is the first-stage order, so a reranker that
returns equal scores leaves those passages as the first stage ranked them. Every result file records
:data:`TIE_RULE`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["TIE_RULE", "rank_by_score"]

TIE_RULE = (
    "score descending; equal scores keep their first-stage order (the order of the candidates as given, "
    "first-stage rank 1 first); a stable sort on -score"
)


def rank_by_score(docids: Sequence[str], scores: Sequence[float]) -> list[tuple[str, float]]:
    """Order ``docids`` (given in first-stage order) by ``scores`` with :data:`TIE_RULE`.

    Scores are compared as float64 (float32 input is widened exactly). NaN scores and duplicate docids are
    refused, because no order is defined for them.
    """
    if len(docids) != len(scores):
        raise ValueError(f"{len(docids)} docids but {len(scores)} scores")
    if len(set(docids)) != len(docids):
        raise ValueError("duplicate docid among the candidates of one query")
    values = np.asarray(scores, dtype=np.float64)
    if values.size and np.isnan(values).any():
        raise ValueError("NaN score: no order is defined; fix the scorer")
    order = np.argsort(-values, kind="stable")
    return [(docids[i], float(values[i])) for i in order.tolist()]
