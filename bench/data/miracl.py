"""MIRACL topics and qrels (plan section "Data": miracl/miracl at the pinned revision, German dev).

Hub layout of ``miracl/miracl`` (as mirrored by anserini-tools and Pyserini): per language a folder
``miracl-v1.0-<lang>/`` with ``topics/topics.miracl-v1.0-<lang>-<split>.tsv`` (``qid<TAB>query``) and
``qrels/qrels.miracl-v1.0-<lang>-<split>.tsv`` (TREC qrels, tab-separated). The bundled dev copies have
the same file format. Qrels are parsed by ``analysis.inputs.trec.read_qrels``; here only the path is resolved.

German has the splits dev and test-B only. test-B (the int8 calibration queries, plan section "OpenVINO int8
variant") is ``topics.miracl-v1.0-de-test-b.tsv`` with 712 queries and no qrels (public MIRACL material and
ir_datasets); it is read with the topics reader alone and checked for its size and for overlap with dev.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.data.layout import TEST_B_QUERIES, TEST_B_SPLIT, qrels_relpath, topics_relpath
from bench.data.textfile import open_text
from bench.integrity.enforce import require_locked


def read_topics(path: Path) -> dict[str, str]:
    """``qid<TAB>query`` per line, no header; qids unique, queries non-empty."""
    if not path.is_file():
        raise BenchError(f"{path}: topics file missing")
    out: dict[str, str] = {}
    with open_text(path) as fh:  # a byte-order mark is not part of the first query id
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[0] or not parts[1].strip():
                raise BenchError(f"{path}:{lineno}: expected 'qid<TAB>query', got {line[:80]!r}")
            if parts[0] in out:
                raise BenchError(f"{path}:{lineno}: query id {parts[0]!r} occurs twice")
            out[parts[0]] = parts[1]
    if not out:
        raise BenchError(f"{path}: no topics")
    return out


def hub_topics_and_qrels(snapshot: Path, lang: str = "de", split: str = "dev") -> tuple[dict[str, str], Path]:
    """(queries, qrels path) from a ``miracl/miracl`` snapshot directory."""
    topics = snapshot / topics_relpath(lang, split)
    qrels = snapshot / qrels_relpath(lang, split)
    if not qrels.is_file():
        raise BenchError(f"{qrels}: qrels file missing in the miracl/miracl snapshot (expected that layout)")
    return read_topics(topics), require_locked(qrels)


def hub_test_b_topics(snapshot: Path, dev_qids: Iterable[str], lang: str = "de") -> dict[str, str]:
    """MIRACL test-B topics (topics only: test-B has no qrels), checked against the evidence.

    Raises unless the file holds exactly ``TEST_B_QUERIES`` queries and none of their ids is a dev id
    (the plan: calibration queries "disjoint from dev").
    """
    path = snapshot / topics_relpath(lang, TEST_B_SPLIT)
    if not path.is_file():
        raise BenchError(
            f"{path}: test-B topics missing in the miracl/miracl snapshot; run `{hint('data fetch miracl')}`"
        )
    topics = read_topics(path)
    if len(topics) != TEST_B_QUERIES:
        raise BenchError(
            f"{path}: {len(topics)} queries, MIRACL de test-B has {TEST_B_QUERIES}; "
            "the file is incomplete or not the pinned revision's"
        )
    overlap = sorted(set(topics) & set(dev_qids))
    if overlap:
        raise BenchError(
            f"{path}: {len(overlap)} test-B query id(s) are also dev queries (first: {overlap[0]!r}); "
            "calibration queries must be disjoint from dev"
        )
    return topics
