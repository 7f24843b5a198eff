"""A German corpus of any size, generated on the fly from the bundled sample's statistics.

The rule (``RULE``, printed by the benchmark and stated in docs/performance.md):

- **Words** are the sample's tokens (``\\w+`` runs of the 7,402 real German MIRACL passages, case kept),
  ranked by their count in the sample. A token is drawn i.i.d.: with the probability mass the sample gives
  to words seen at least twice (the *head*), one of those words in proportion to its sample count; otherwise
  (the *tail*, the mass of the sample's hapaxes) a rank ``r = H * U**(-1/(s-1))`` from a Pareto law
  starting at the head size ``H`` (``U`` uniform), i.e. a Zipf tail ``p(r) ~ r**-s``. ``s = 1/beta`` where
  ``beta`` is the Heaps exponent fitted on the sample (distinct words ``V = K * T**beta`` over ``T``
  tokens, least squares in log-log over the sample's passage prefixes). For i.i.d. draws from a Zipf law
  of exponent ``s`` the number of distinct words grows as ``T**(1/s)``, so the vocabulary keeps growing
  with N by Heaps' law with the sample's exponent (measured per N and printed beside the prediction).
- **Tail ranks** below the sample's vocabulary size are the sample's rare words; ranks beyond are new
  words made the way German makes most new words, by **compounding**: the concatenation of two real
  sample words (the first as written, the second lower-cased), picked by a fixed bijection of the rank onto
  pairs of a seeded permutation of the sample's words of at least four letters. So new words are made of
  real German morphemes; a compound can, rarely, equal another word (counted as the same word).
- **Passage lengths** (tokens of the text) are drawn from the sample's own lengths (bootstrap); every
  article has ``PASSAGES_PER_ARTICLE`` passages (an assumption, not a MIRACL statistic) and one title whose
  length in tokens is drawn from the sample's non-empty titles, its words by the same rule.
- Ids are MIRACL-form ``<article>#<passage>`` in ascending import order.

Everything is a pure function of the seed (``np.random.default_rng(seed)``, passed down).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from bench.data import Passage
from bench.data.bundled import load_sample

TOKEN = re.compile(r"\w+")
PASSAGES_PER_ARTICLE = 10  # assumption (stated in the docs), not measured on MIRACL
CHUNK = 2000  # passages generated per numpy call

RULE = (
    "tokens i.i.d.: head (sample words seen >= 2 times) by sample count, with the head's sample mass; "
    "tail by a Zipf law p(r) ~ r^-s, s = 1/beta, beta = Heaps exponent fitted on the sample; tail ranks "
    "beyond the sample vocabulary are compounds of two real sample words; passage lengths bootstrapped "
    f"from the sample; {PASSAGES_PER_ARTICLE} passages per article (assumption), one generated title each"
)


@dataclass(frozen=True)
class SampleStats:
    words: list[str]  # by sample count, descending
    counts: np.ndarray  # int64, same order
    head: int  # words seen at least twice
    tail_mass: float  # share of sample tokens that are hapaxes
    heaps_k: float
    heaps_beta: float
    lengths: np.ndarray  # tokens per sample passage text
    title_lengths: np.ndarray  # tokens per non-empty sample title
    tokens: int
    passages: int
    mean_passage_bytes: float  # UTF-8 bytes of title + "\n" + text, sample mean

    def record(self) -> dict[str, object]:
        return {
            "sample_passages": self.passages,
            "sample_tokens": self.tokens,
            "sample_distinct_words": len(self.words),
            "head_words": self.head,
            "tail_mass": self.tail_mass,
            "heaps_k": self.heaps_k,
            "heaps_beta": self.heaps_beta,
            "zipf_tail_exponent": 1.0 / self.heaps_beta,
            "sample_mean_passage_bytes": self.mean_passage_bytes,
            "passages_per_article": PASSAGES_PER_ARTICLE,
        }


def sample_stats() -> SampleStats:
    corpus = load_sample().corpus
    counter: Counter[str] = Counter()
    lengths, titles, pts = [], [], []
    total = 0
    for p in corpus:
        ws = TOKEN.findall(p.text)
        counter.update(ws)
        total += len(ws)
        lengths.append(len(ws))
        pts.append((total, len(counter)))
        if p.title:
            titles.append(max(1, len(TOKEN.findall(p.title))))
    ranked = counter.most_common()
    counts = np.array([c for _, c in ranked], dtype=np.int64)
    head = int((counts >= 2).sum())
    xy = np.array(pts[50:], dtype=np.float64)  # the first passages are too few tokens for the law
    beta, log_k = np.polyfit(np.log(xy[:, 0]), np.log(xy[:, 1]), 1)
    return SampleStats(
        words=[w for w, _ in ranked],
        counts=counts,
        head=head,
        tail_mass=float(counts[head:].sum() / total),
        heaps_k=float(np.exp(log_k)),
        heaps_beta=float(beta),
        lengths=np.array(lengths, dtype=np.int64),
        title_lengths=np.array(titles, dtype=np.int64),
        tokens=total,
        passages=len(corpus),
        mean_passage_bytes=float(np.mean([len(p.passage_text.encode()) for p in corpus])),
    )


class Generator:
    """``passages(n)`` streams the corpus of ``n`` passages (``CHUNK`` at a time, bounded memory)."""

    def __init__(self, stats: SampleStats, seed: int = 0) -> None:
        self.stats = stats
        self.seed = seed
        rng = np.random.default_rng(seed)
        self._head_cdf = np.cumsum(stats.counts[: stats.head]) / stats.counts[: stats.head].sum()
        parts = [w for w in stats.words if len(w) >= 4 and w.isalpha()]
        perm = rng.permutation(len(parts))
        self._parts = [parts[i] for i in perm]
        self._lower = [w.lower() for w in self._parts]
        self._alpha = 1.0 / stats.heaps_beta - 1.0  # Pareto index of the rank tail

    def word(self, rank: int) -> str:
        v = len(self.stats.words)
        if rank < v:
            return self.stats.words[rank]
        k = rank - v
        n = len(self._parts)
        i, q = k % n, (k // n) % n
        return self._parts[i] + self._lower[(q + i * 7919) % n]  # for each first part a shift: a bijection

    def _ranks(self, rng: np.random.Generator, size: int) -> np.ndarray:
        st = self.stats
        tail = rng.random(size) < st.tail_mass
        out = np.searchsorted(self._head_cdf, rng.random(size), side="right").astype(np.int64)
        u = rng.random(int(tail.sum()))
        r = st.head * np.power(np.maximum(u, 1e-300), -1.0 / self._alpha)
        out[tail] = np.minimum(r, 2.0**62).astype(np.int64)
        return np.minimum(out, self.stats.head + 2**40)

    def passages(self, n: int) -> Iterator[Passage]:
        st = self.stats
        rng = np.random.default_rng([self.seed, 1])
        titles: dict[int, str] = {}
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            lens = st.lengths[rng.integers(0, len(st.lengths), m)]
            first_art = start // PASSAGES_PER_ARTICLE
            last_art = (start + m - 1) // PASSAGES_PER_ARTICLE
            tlens = st.title_lengths[rng.integers(0, len(st.title_lengths), last_art - first_art + 1)]
            ranks = self._ranks(rng, int(lens.sum() + tlens.sum()))
            words = [self.word(int(r)) for r in ranks]
            pos = 0
            chunk_titles: dict[int, str] = {}
            for a, tl in zip(range(first_art, last_art + 1), tlens, strict=True):
                # an article begun in the previous chunk keeps its title (its drawn words go unused)
                chunk_titles[a] = titles.get(a) or " ".join(words[pos : pos + int(tl)])
                pos += int(tl)
            titles = chunk_titles
            for i in range(m):
                idx = start + i
                art = idx // PASSAGES_PER_ARTICLE
                ln = int(lens[i])
                text = " ".join(words[pos : pos + ln])
                pos += ln
                yield Passage(f"{art + 1}#{idx % PASSAGES_PER_ARTICLE}", titles[art], text)


def distinct_words(passages: Iterator[Passage]) -> tuple[int, int]:
    """(tokens, distinct tokens) of the text fields, as the generator's unit counts them."""
    seen: set[str] = set()
    total = 0
    for p in passages:
        ws = TOKEN.findall(p.text)
        total += len(ws)
        seen.update(ws)
    return total, len(seen)


def corpus(n: int, seed: int = 0) -> Iterator[Passage]:
    """The generated corpus of ``n`` passages (a ``module:function:n`` spec of resume_check)."""
    return Generator(sample_stats(), seed=seed).passages(n)
