"""Qrels prepared once for many runs (:class:`Judgments`): the lowest module of the metrics.

Kept apart from :mod:`analysis.metrics` so that the run readers (:mod:`analysis.trec_fast`) can name the type
without importing the metrics, which import the readers (issue 24: no import cycles). Reading a qrels file
stays :func:`analysis.trec.read_qrels` (it shares the TREC readers' validation).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from analysis.floatsum import ltr_sum

__all__ = ["CUTOFF", "UNJUDGED", "Judgments", "dcg_discount"]

CUTOFF = 10  # nDCG@10: the ideal DCG is computed to this depth
UNJUDGED: Final = -(2**62)  # relevance marker of an unjudged row


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
        order = np.argsort(np.asarray(keys, dtype=np.int64), kind="stable")
        return cls(qids, qrels, idcg, nrel, doc_index, np.asarray(keys, dtype=np.int64)[order],
                   np.asarray(rels, dtype=np.int64)[order])

    def relevance(self, row_query: np.ndarray, docids: Sequence[str]) -> np.ndarray:
        """Relevance of each row (query index into ``qids``, docid); :data:`UNJUDGED` where not judged."""
        doc = np.fromiter(map(self.doc_index.get, docids, itertools.repeat(-1)), dtype=np.int64,
                          count=len(docids))
        return self.relevance_of(row_query, doc)

    def relevance_of(self, row_query: np.ndarray, doc: np.ndarray) -> np.ndarray:
        """Like :meth:`relevance`, each docid given as its index in ``doc_index`` (-1: not in the qrels)."""
        out = np.full(doc.size, UNJUDGED, dtype=np.int64)
        if self.pair_keys.size == 0:
            return out
        key = row_query * len(self.doc_index) + doc
        pos = np.minimum(np.searchsorted(self.pair_keys, key), self.pair_keys.size - 1)
        hit = (doc >= 0) & (self.pair_keys[pos] == key)
        out[hit] = self.pair_rels[pos[hit]]
        return out
