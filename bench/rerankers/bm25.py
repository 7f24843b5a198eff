"""bm25-standin: BM25 over the rehearsal's corpus as a second, lexical stand-in reranker.

Not a plan model. ``minilm-standin`` embeds with the very model that made the rehearsal's vector-stage
candidates, so reranking vector-71k with it can only come out "on par"; this scorer is genuinely different:
no model, only term statistics. Library: PyPI ``bm25s`` (Lucene's BM25 variant, its default k1 = 1.5,
b = 0.75, nothing tuned), tokenised by bm25s's own tokenizer (lower-cased words of two or more word
characters), the Snowball German stop list (``data/bundled/snowball-german-stop``, the list behind the plan's
stop set) removed, every word stemmed by the Snowball German stemmer (PyPI ``PyStemmer``, the C build of
Snowball: it tokenises the 7,402-passage sample in about 1 s where the pure-Python ``snowballstemmer`` took
11.5 s, and both give the same stem for all 78,316 distinct words of that sample).

Corpus statistics (document frequencies, average length) come from the corpus the adapter is built with:
in the rehearsal, every passage text of the rehearsal's corpus (``title + "\\n" + text``). A call scores the
given candidates with those statistics; a candidate that is not a passage of that corpus is refused by name
(its statistics would be undefined). Scores do not depend on the other candidates (pointwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

import numpy as np

from bench.core.errors import BenchError
from bench.firststage.stopwords import default_path, read_snowball_list
from bench.rerankers.protocol import RecordLog, RerankerMeta, ScoreResult, make_result, package_versions

BM25_ID = "bm25-standin"
BM25_PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75}  # bm25s 0.3.16's defaults, stated, not tuned
BM25_PACKAGES = ("bm25s", "PyStemmer", "numpy")


def german_tokenizer() -> Any:
    """bm25s's tokenizer with the Snowball German stop list and stemmer (one place for index and query)."""
    # lazy: bm25s/PyStemmer: only when the bm25 stand-in is built
    import Stemmer
    from bm25s.tokenization import Tokenizer

    stemmer = Stemmer.Stemmer("german")
    return Tokenizer(lower=True, stopwords=read_snowball_list(default_path()), stemmer=stemmer.stemWord)


class BM25Standin:
    """``Reranker`` protocol: BM25 scores of each candidate for the query, statistics from ``corpus``."""

    def __init__(self, corpus: Sequence[str], *, device: str = "cpu", chunk_size: int | None = None) -> None:
        # lazy: bm25s/PyStemmer: only when the bm25 stand-in is built
        import bm25s

        texts = list(corpus)
        if not texts:
            raise BenchError(f"{BM25_ID} needs the corpus for its statistics; it was given no passages")
        if device != "cpu":
            raise BenchError(f"{BM25_ID} runs on the CPU only (it has no model), not on {device!r}")
        self._tokenizer = german_tokenizer()
        tokens = self._tokenizer.tokenize(texts, return_as="tuple", show_progress=False)
        self._bm25 = bm25s.BM25(**BM25_PARAMS)
        self._bm25.index(tokens, show_progress=False)
        self._lengths = np.asarray([len(ids) for ids in tokens.ids], dtype=np.int64)
        self._row: dict[str, int] = {}
        self._words: dict[int, str] = {}  # the tokenizer's ids -> words (query_tokens)
        for i, t in enumerate(texts):
            self._row.setdefault(t, i)  # identical texts have identical statistics and scores
        self._meta = RerankerMeta(
            id=BM25_ID,
            model="BM25 (bm25s, Snowball German stemmer and stop list)",
            revision=f"bm25s=={version('bm25s')}",
            dtype="float32",
            device="cpu",
            chunk_size=chunk_size,
            listwise=False,
            max_length=None,
            implementation="lexical stand-in (BM25 over the rehearsal corpus), not a plan model",
            packages=package_versions(BM25_PACKAGES),
            extra={
                **BM25_PARAMS,
                "corpus_passages": len(texts),
                "tokenizer": "bm25s Tokenizer, lower=True, Snowball German stop list, PyStemmer german",
            },
        )
        self.log = RecordLog()

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def query_tokens(self, query: str) -> list[str]:
        """The query's stemmed terms that occur in the corpus (others add nothing to any BM25 score)."""
        ids = self._tokenizer.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)
        # the ids as words, as bm25s's return_as="string" gives them, whose decode builds the inverse of the
        # whole vocabulary on every call (0.1 s a query for the 7,402-passage sample): built here once, again
        # only if the vocabulary has grown
        stems = self._tokenizer.get_vocab_dict()
        if len(self._words) != len(stems):
            self._words = {v: k for k, v in stems.items()}
        vocab = self._bm25.vocab_dict
        return [w for w in (self._words[i] for i in ids[0]) if w and w in vocab]

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        docs = list(passages)
        if not docs:
            return self.log.add(make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0))
        rows = []
        for i, d in enumerate(docs):
            row = self._row.get(d)
            if row is None:
                raise BenchError(
                    f"{BM25_ID}: candidate {i + 1} of the query {query[:60]!r} is not a passage of the "
                    "corpus the scorer was built on; build it with the corpus the candidates come from"
                )
            rows.append(row)
        terms = self.query_tokens(query)
        if terms:
            every = np.asarray(self._bm25.get_scores(terms), dtype=np.float64)
            scores = every[np.asarray(rows)]
        else:  # no query term in the corpus: every candidate scores 0 (first-stage order decides)
            scores = np.zeros(len(docs), dtype=np.float64)
        lengths = self._lengths[np.asarray(rows)]
        return self.log.add(
            make_result(
                scores,
                max_input_tokens=int(lengths.max()) + len(terms),
                truncated_pairs=0,
                chunk_size=len(docs),
                input_tokens=int(lengths.sum()) + len(terms),
            )
        )
