"""MIRACL topics and qrels (plan section "Data": miracl/miracl at the pinned revision, German dev).

Hub layout of ``miracl/miracl`` (as mirrored by anserini-tools and Pyserini): per language a folder
``miracl-v1.0-<lang>/`` with ``topics/topics.miracl-v1.0-<lang>-<split>.tsv`` (``qid<TAB>query``) and
``qrels/qrels.miracl-v1.0-<lang>-<split>.tsv`` (TREC qrels, tab-separated). The bundled dev copies have
the same file format. Qrels are parsed by ``analysis.trec.read_qrels``; here only the path is resolved.
"""

from __future__ import annotations

from pathlib import Path

from bench.data.textfile import open_text
from bench.errors import BenchError
from bench.integrity.coverage import require_locked


def topics_relpath(lang: str = "de", split: str = "dev") -> str:
    return f"miracl-v1.0-{lang}/topics/topics.miracl-v1.0-{lang}-{split}.tsv"


def qrels_relpath(lang: str = "de", split: str = "dev") -> str:
    return f"miracl-v1.0-{lang}/qrels/qrels.miracl-v1.0-{lang}-{split}.tsv"


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
