"""Qrels prepared once for many runs (:class:`Judgments`): the lowest module of the metrics.

Kept apart from :mod:`analysis.stats.metrics` so that the run readers (:mod:`analysis.inputs.trec_fast`) can
name the type without importing the metrics, which import the readers (no import cycles). Reading a qrels file
stays :func:`analysis.inputs.trec.read_qrels` (it shares the TREC readers' validation).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from analysis.core.floatsum import ltr_sum

__all__ = [
    "CUTOFF",
    "LABEL_FIX",
    "LABEL_RULE",
    "MAX_LABEL",
    "MIN_LABEL",
    "UNJUDGED",
    "Judgments",
    "dcg_discount",
    "label_problem",
    "labels_out_of_range",
]

CUTOFF = 10  # nDCG@10: the ideal DCG is computed to this depth
UNJUDGED: Final = -(2**62)  # relevance marker of an unjudged row: outside MIN_LABEL..MAX_LABEL, never a label

# What a relevance label may be, decided here once for every qrels reader. trec_eval
# (form_res_rels.c, also inside pytrec_eval) allocates and walks an array of (largest label + 1) levels per
# query: measured with pytrec-eval-terrier 0.5.11 on 305 queries, 0.04 s at 65,535, 1.1 s at 2^20, 22 s at
# 2^24; from 2^61 the array size overflows and it writes out of bounds (a segfault at 2^62), and a label over
# 2^63 - 1 (a C long) raises SystemError. A negative label is "in the pool, not judged" to trec_eval but
# judged non-relevant to our measures, so it is refused rather than read two ways.
MIN_LABEL: Final = 0
MAX_LABEL: Final = 2**16 - 1
LABEL_RULE: Final = f"an integer relevance label {MIN_LABEL}..{MAX_LABEL}"
LABEL_FIX: Final = (
    f"write each relevance label as a whole number {MIN_LABEL}..{MAX_LABEL} (0 = judged non-relevant); "
    "trec_eval and pytrec_eval crash or slow down on larger labels and read negative ones as unjudged, so "
    "drop the line of a passage that was not judged"
)


def labels_out_of_range(labels: np.ndarray) -> np.ndarray:
    """Indices of the labels outside ``MIN_LABEL..MAX_LABEL`` (vectorised; an int64 array)."""
    return np.flatnonzero((labels < MIN_LABEL) | (labels > MAX_LABEL))


def label_problem(label: object) -> str | None:
    """Why ``label`` (a value of a qrels mapping) is not a relevance label, or None if it is one."""
    if isinstance(label, bool) or not isinstance(label, (int, np.integer)):
        return f"{LABEL_RULE}, found {label!r} (not an integer)"
    if not MIN_LABEL <= int(label) <= MAX_LABEL:
        return f"{LABEL_RULE}, found {int(label)}"
    return None


def dcg_discount(positions: np.ndarray) -> np.ndarray:
    return 1.0 / np.log2(positions + 2.0)  # positions are 0-based


@dataclass(frozen=True)
class Judgments:
    """Qrels prepared once for many runs: sorted qids, ideal DCG@10 and relevant counts per query, and the
    judged (query, docid) pairs as sorted integer keys ``query_index * len(doc_index) + doc_index``."""

    qids: tuple[str, ...]
    qrels: Mapping[str, Mapping[str, int]]
    idcg: np.ndarray
    n_relevant: np.ndarray
    doc_index: Mapping[str, int]
    pair_keys: np.ndarray
    pair_rels: np.ndarray

    @classmethod
    def from_qrels(cls, qrels: Mapping[str, Mapping[str, int]]) -> Judgments:
        qids = tuple(sorted(qrels))
        idcg = np.zeros(len(qids))
        nrel = np.zeros(len(qids))
        doc_index: dict[str, int] = {}
        keys: list[int] = []
        rels: list[int] = []
        for q in qids:
            for d in qrels[q]:
                doc_index.setdefault(d, len(doc_index))
        for i, q in enumerate(qids):
            gains = np.sort(np.array([r for r in qrels[q].values() if r > 0], dtype=np.float64))[::-1]
            nrel[i] = gains.size
            top = gains[:CUTOFF]
            # summed left to right, like the DCG (np.bincount), so a perfect ranking gives exactly 1.0
            idcg[i] = ltr_sum((top * dcg_discount(np.arange(top.size))).tolist())
            for d, r in qrels[q].items():
                keys.append(i * len(doc_index) + doc_index[d])
                rels.append(r)
        _check_labels(qrels, rels)
        order = np.argsort(np.asarray(keys, dtype=np.int64), kind="stable")
        return cls(
            qids,
            qrels,
            idcg,
            nrel,
            doc_index,
            np.asarray(keys, dtype=np.int64)[order],
            np.asarray(rels, dtype=np.int64)[order],
        )

    def relevance(self, row_query: np.ndarray, docids: Sequence[str]) -> np.ndarray:
        """Relevance of each row (query index into ``qids``, docid); :data:`UNJUDGED` where not judged."""
        doc = np.fromiter(
            map(self.doc_index.get, docids, itertools.repeat(-1)), dtype=np.int64, count=len(docids)
        )
        return self.relevance_of(row_query, doc)

    def relevance_of(self, row_query: np.ndarray, doc: np.ndarray) -> np.ndarray:
        """Like :meth:`relevance`, each docid given as its index in ``doc_index`` (-1: not in the qrels)."""
        out = np.full(doc.size, UNJUDGED, dtype=np.int64)
        if self.pair_keys.size == 0:
            return out
        rows = np.flatnonzero(doc >= 0)  # only the rows of judged docids are looked up (a run's few percent)
        key = row_query[rows] * len(self.doc_index) + doc[rows]
        pos = np.minimum(np.searchsorted(self.pair_keys, key), self.pair_keys.size - 1)
        hit = self.pair_keys[pos] == key
        out[rows[hit]] = self.pair_rels[pos[hit]]
        return out


def _check_labels(qrels: Mapping[str, Mapping[str, int]], rels: list[int]) -> None:
    """Qrels built in memory (not read by :func:`analysis.inputs.trec.read_qrels`) meet the same label
    rule."""
    values = np.asarray(rels)
    if values.dtype.kind not in "iu" or labels_out_of_range(values).size:  # floats, huge ints: look closer
        for q, judged in qrels.items():
            for d, r in judged.items():
                problem = label_problem(r)
                if problem is not None:
                    raise ValueError(
                        f"qrels query {q!r}, passage {d!r}: expected {problem}. Fix: {LABEL_FIX}"
                    )
