"""The study's calibration sources (plan section "OpenVINO int8 variant"): MIRACL German test-B queries from
``miracl/miracl`` at the pinned revision (no judgments) and passages of the full corpus outside the 71k
corpus. Nothing here runs without the fetched snapshots; each missing piece is refused by name.

Full-corpus passages: ``2 * n`` positions are drawn (``np.random.default_rng(seed)``, without replacement)
among the plan's 15,866,222 passages in shard order; the corpus is streamed once, and the first ``n``
drawn positions whose passage is not in the 71k corpus are kept (71k is 0.45 % of the full corpus, so
``2 * n`` draws are plenty; fewer is an error). A corpus whose length differs from the plan is refused.
The test-B topics are read in one place (``load_testb_topics``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import CORPUS_71K, CORPUS_FULL, CORPUS_FULL_PASSAGES, LANGUAGE, MIRACL, SEED
from bench.data import Passage
from bench.data.hub import iter_corpus_full, read_corpus_71k
from bench.data.miracl import read_topics, topics_relpath
from bench.int8.calibration import CALIBRATION_PAIRS, CalibrationSet, draw_pairs
from bench.integrity.hub import snapshot_dir

TESTB_SPLIT = "testB"  # MIRACL's split name for the held-out test set B (file name unconfirmed here)
TESTB_NAMES = ("testB", "test-b", "testb", "test_b")
SOURCE = "study: MIRACL de test-B queries x full-corpus passages outside the 71k corpus"


def load_testb_topics(snapshot: Path | None = None) -> tuple[dict[str, str], Path]:
    """(test-B queries, file read). Says what the topics folder holds when the expected file is absent."""
    snap = snapshot if snapshot is not None else snapshot_dir(MIRACL)
    for name in TESTB_NAMES:
        path = snap / topics_relpath(LANGUAGE, name)
        if path.is_file():
            return read_topics(path), path
    folder = (snap / topics_relpath(LANGUAGE, TESTB_SPLIT)).parent
    found = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    names = ", ".join(topics_relpath(LANGUAGE, n).rsplit("/", 1)[1] for n in TESTB_NAMES)
    raise BenchError(
        f"{folder}: no German test-B topics ({names}); found {found or 'no such folder'}. Fetch "
        f"{MIRACL.repo}@{MIRACL.revision} with `{hint('data fetch')}`; if the hub layout differs, adapt "
        "bench/int8/study_data.py"
    )


def draw_full_corpus(
    excluded: set[str], *, n: int, seed: int, snapshot: Path | None = None, total: int = CORPUS_FULL_PASSAGES
) -> list[Passage]:
    """n passages of the full corpus outside ``excluded``, drawn as the module docstring says."""
    rng = np.random.default_rng(seed)
    order = [int(i) for i in rng.choice(total, size=2 * n, replace=False)]
    wanted = set(order)
    found: dict[int, Passage] = {}
    count = 0
    for i, passage in enumerate(
        iter_corpus_full(snapshot if snapshot is not None else snapshot_dir(CORPUS_FULL))
    ):
        count = i + 1
        if i in wanted:
            found[i] = passage
    if count != total:
        raise BenchError(f"full corpus: {count:,} passages streamed, the plan says {total:,}; fetch it again")
    keep = [found[i] for i in order if found[i].docid not in excluded][:n]
    if len(keep) < n:
        raise BenchError(
            f"full corpus: only {len(keep)} of {2 * n} drawn passages lie outside the 71k corpus"
        )
    return keep


def study_calibration(
    dev_queries: set[str],
    *,
    n: int = CALIBRATION_PAIRS,
    miracl: Path | None = None,
    corpus_71k: Path | None = None,
    corpus_full: Path | None = None,
    total: int = CORPUS_FULL_PASSAGES,
) -> tuple[CalibrationSet, dict[str, str], dict[str, str]]:
    """(calibration set, query texts, passage texts) from the fetched snapshots."""
    queries, path = load_testb_topics(miracl)
    ids_71k = {
        p.docid for p in read_corpus_71k(corpus_71k if corpus_71k is not None else snapshot_dir(CORPUS_71K))
    }
    passages = draw_full_corpus(ids_71k, n=n, seed=SEED, snapshot=corpus_full, total=total)
    # draw_pairs draws again among the n passages so that query and passage draws share one seeded stream
    cal = draw_pairs(
        queries,
        passages,
        n=n,
        seed=SEED,
        source=SOURCE,
        dev_queries=dev_queries,
        excluded_passages=ids_71k,
        excluded_name="71k",
    )
    cal = CalibrationSet(
        cal.source,
        cal.seed,
        cal.pairs,
        cal.query_sha256,
        cal.passage_sha256,
        {**cal.checks, "topics_file": path.name, "full_corpus_draws": 2 * n},
    )
    return cal, queries, {p.docid: p.passage_text for p in passages}


def study_texts(
    cal: CalibrationSet, *, miracl: Path | None = None, corpus_full: Path | None = None
) -> list[tuple[str, str]]:
    """The calibration pairs' texts, read again from the snapshots and checked against their SHA-256."""
    queries, _ = load_testb_topics(miracl)
    wanted = {d for _, d in cal.pairs}
    texts: dict[str, str] = {}
    for p in iter_corpus_full(corpus_full if corpus_full is not None else snapshot_dir(CORPUS_FULL)):
        if p.docid in wanted:
            texts[p.docid] = p.passage_text
            if len(texts) == len(wanted):
                break
    return cal.texts(queries, texts, "study calibration set")
