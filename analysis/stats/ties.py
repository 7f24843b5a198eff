"""Where a run's rank order and trec_eval's order part (ties said aloud).

Our numbers follow the rank column (the plan's tie rule: equal scores keep their first-stage order,
:mod:`analysis.stats.ranking`). trec_eval ignores the rank column: it sorts each query by score descending and
breaks equal scores by docid descending (``comp_sim_docno`` in form_res_rels.c: ``strcmp(p2->docno,
p1->docno)``, byte order, which for UTF-8 is code-point order). pytrec_eval (pytrec-eval-terrier, the
project's reference) builds trec_eval with the score held as a 32-bit float (``float sim`` in its trec_eval
copy), so scores that are equal once rounded to float32 are ties there (measured: 1.0 and 1.0 + 1e-9 tie,
1.0 and 1.0 + 1e-7 do not); newer stand-alone trec_eval holds a double. Ties are taken as pytrec_eval
takes them.

Rows arrive in rank order with scores that never rise (the reader checks it), and rounding to float32 keeps
that order, so tied rows are adjacent: finding them costs one vectorised comparison, and only tied rows are
looked at one by one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.inputs.trec import RunTable
from analysis.stats.metrics import Judgments, evaluate_table

__all__ = [
    "TREC_EVAL_ORDER",
    "TrecEvalOrder",
    "row_queries",
    "tie_warning",
    "tied_query_mask",
    "trec_eval_order",
]

TREC_EVAL_ORDER = (
    "trec_eval's order: score descending (as a 32-bit float, as pytrec_eval compares it), "
    "equal scores by docid descending"
)


def row_queries(table: RunTable) -> np.ndarray:
    """Each row's query index (int64; rows grouped by query, as a :class:`RunTable` holds them)."""
    return np.repeat(np.arange(len(table.qids), dtype=np.int64), np.diff(table.offsets))


def tied_query_mask(table: RunTable) -> np.ndarray:
    """Per query of ``table`` (bool): at least two of its scores are equal as pytrec_eval compares them
    (float32), wherever they are in the query. Rows need not be in rank order."""
    row_q = row_queries(table)
    s32 = table.scores.astype(np.float32)
    same_q = row_q[1:] == row_q[:-1]
    if np.any(same_q & (s32[1:] > s32[:-1])):  # else (the readers' tables) equal scores are adjacent already
        order = np.lexsort((s32, row_q))
        row_q, s32 = row_q[order], s32[order]
        same_q = row_q[1:] == row_q[:-1]
    tied = same_q & (s32[1:] == s32[:-1])
    mask = np.zeros(len(table.qids), dtype=bool)
    mask[row_q[1:][tied]] = True
    return mask


@dataclass(frozen=True)
class TrecEvalOrder:
    """The run in trec_eval's order, and the queries whose order that changes (sorted qids)."""

    table: RunTable
    reordered: tuple[str, ...]


def trec_eval_order(table: RunTable) -> TrecEvalOrder:
    """``table`` (rows in rank order, scores never rising) reordered as trec_eval orders it."""
    s32 = table.scores.astype(np.float32)
    row_q = row_queries(table)
    pair = np.flatnonzero((row_q[1:] == row_q[:-1]) & (s32[1:] == s32[:-1]))  # row i ties with row i + 1
    if pair.size == 0:
        return TrecEvalOrder(table, ())
    docids = list(table.docids)
    scores = table.scores.copy()
    reordered: set[int] = set()
    # runs of consecutive tied pairs are the tie groups: rows start .. end inclusive
    breaks = np.flatnonzero(np.diff(pair) != 1)
    for first, last in zip(np.r_[0, breaks + 1].tolist(), np.r_[breaks, pair.size - 1].tolist(), strict=True):
        start, end = int(pair[first]), int(pair[last]) + 1
        group = sorted(range(start, end + 1), key=lambda row: docids[row], reverse=True)
        if group != list(range(start, end + 1)):
            reordered.add(int(row_q[start]))
            new_docs = [table.docids[row] for row in group]
            new_scores = table.scores[group]
            docids[start : end + 1] = new_docs
            scores[start : end + 1] = new_scores
    if not reordered:
        return TrecEvalOrder(table, ())
    out = RunTable(table.qids, table.offsets, tuple(docids), scores, sha256=table.sha256)
    return TrecEvalOrder(out, tuple(table.qids[i] for i in sorted(reordered)))


def tie_warning(judgments: Judgments, table: RunTable, name: str) -> str | None:
    """One line for ``analysis metrics`` when tied scores make ``table``'s rank order differ from
    trec_eval's: both nDCG@10 values; None when the two orders agree (then so do the numbers)."""
    alt = trec_eval_order(table)
    if not alt.reordered:
        return None
    ours = float(evaluate_table(judgments, table, ["ndcg@10"])["ndcg@10"].mean())
    theirs = float(evaluate_table(judgments, alt.table, ["ndcg@10"])["ndcg@10"].mean())
    n = len(alt.reordered)
    return (
        f"{name}: warning: tied scores in {n} quer{'y' if n == 1 else 'ies'} "
        f"(first {alt.reordered[0]!r}) "
        f"order the passages differently from {TREC_EVAL_ORDER}; nDCG@10 {ours!r} in the file's rank "
        f"order (the plan's tie rule, first-stage rank: the number reported here), {theirs!r} in "
        "trec_eval's order"
    )
