"""The bundled rehearsal sample (data/bundled, see its SOURCES.md): real German MIRACL passages.

- 305 MIRACL de dev topics and the qrels file (anserini-tools copies),
- the 3,103 judged dev passages from colbert-kit's docs.csv (no title field: title ""),
- the German NoMIRACL test passages with titles, parsed from the ``prompt`` field of the two jsonl files
  (4,368 distinct docids with a prompt; 69 of them are judged-pool passages and are taken from there,
  leaving 4,299 NoMIRACL-only passages; 24 rows with a null prompt, 235 docids seen only in those rows).

NoMIRACL prompts list the ten passages of ``docids`` as ``[i] Title: text``, separated by blank lines,
between ``\\n\\nCONTEXTS:\\n`` and ``\\n\\nOUTPUT:\\n``. Rules (``NOMIRACL_TITLE_RULE``): a passage's segment
runs from ``[i] `` to the blank line before ``[i+1] `` (or to the OUTPUT marker); the title is everything
before the FIRST ``": "`` of the segment. A Wikipedia title that itself contains ``": "`` would be cut
there; the number of segments with more than one ``": "`` is reported (``ambiguous_titles``) so that it is
visible. Rows whose prompt is null are skipped and counted; docids seen in several rows must carry the
same text, otherwise the loader raises.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.paths import bundled_dir
from bench.data import Passage, sort_passages
from bench.data.miracl import read_topics
from bench.data.textfile import open_text
from bench.integrity.enforce import require_locked

NOMIRACL_FILES = ("relevant.de.test.vanilla_prompt.jsonl", "non_relevant.de.test.vanilla_prompt.jsonl")
NOMIRACL_TITLE_RULE = "title = text before the first ': ' of the '[i] ' segment of the prompt"
_CONTEXTS = "\n\nCONTEXTS:\n"
_OUTPUT = "\n\nOUTPUT:\n"


@dataclass(frozen=True)
class Sample:
    queries: dict[str, str]
    qrels_path: Path
    judged: list[Passage]  # colbert-kit docs.csv, title ""
    nomiracl: list[Passage]  # NoMIRACL passages with titles
    skipped_null_prompts: int
    ambiguous_titles: int
    notes: dict[str, object] = field(default_factory=dict)

    @property
    def corpus(self) -> list[Passage]:
        """All sample passages in import order (ascending MIRACL id)."""
        return sort_passages(self.judged + self.nomiracl)


def read_judged_docs(path: Path) -> list[Passage]:
    """colbert-kit ``docs.csv`` (header ``doc_id,text``): passages without titles."""
    out: list[Passage] = []
    with open_text(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header != ["doc_id", "text"]:
            raise BenchError(f"{path}:1: expected header 'doc_id,text', got {header!r}")
        for row in reader:
            if len(row) != 2 or not row[0] or not row[1]:
                raise BenchError(f"{path}:{reader.line_num}: expected 'doc_id,text', both non-empty")
            out.append(Passage(row[0], "", row[1]))
    return out


def split_prompt(prompt: str, n: int, where: str) -> list[tuple[str, str]]:
    """The ``n`` (title, text) pairs of a NoMIRACL prompt, in docids order."""
    start = prompt.find(_CONTEXTS)
    end = prompt.rfind(_OUTPUT)
    if start < 0 or end < start:
        raise BenchError(f"{where}: prompt lacks the CONTEXTS/OUTPUT markers of the NoMIRACL vanilla prompt")
    body = prompt[start + len(_CONTEXTS) : end]
    parts = re.split(r"(?:^|\n\n)\[(\d+)\] ", body)
    numbers = parts[1::2]
    if parts[0] != "" or numbers != [str(i) for i in range(1, n + 1)]:
        raise BenchError(f"{where}: expected passages [1]..[{n}] in the prompt, found {numbers}")
    pairs: list[tuple[str, str]] = []
    for seg in parts[2::2]:
        title, sep, text = seg.partition(": ")
        if not sep or not title or not text:
            raise BenchError(f"{where}: passage segment {seg[:60]!r} is not of the form 'Title: text'")
        pairs.append((title, text))
    return pairs


def read_nomiracl(paths: list[Path]) -> tuple[list[Passage], int, int]:
    """(passages with unique docids, rows skipped for a null prompt, segments with several ': ')."""
    seen: dict[str, Passage] = {}
    skipped = 0
    ambiguous = 0
    for path in paths:
        with open_text(path) as fh:
            for lineno, line in enumerate(fh, 1):
                where = f"{path}:{lineno}"
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BenchError(f"{where}: not valid JSON ({exc.msg})") from exc
                docids = row.get("docids")
                if not isinstance(docids, list) or not docids:
                    raise BenchError(f"{where}: field 'docids' missing or empty")
                if row.get("prompt") is None:
                    skipped += 1
                    continue
                for docid, (title, text) in zip(
                    docids, split_prompt(row["prompt"], len(docids), where), strict=True
                ):
                    p = Passage(docid, title, text)
                    old = seen.get(docid)
                    if old is not None and old != p:
                        raise BenchError(f"{where}: docid {docid} differs from an earlier row")
                    if old is None:
                        ambiguous += int(": " in text)
                    seen[docid] = p
    return list(seen.values()), skipped, ambiguous


def load_sample(root: Path | None = None) -> Sample:
    """The rehearsal sample from ``data/bundled`` (or ``root``, laid out the same way)."""
    base = root if root is not None else bundled_dir()
    dev = base / "miracl-de-dev"
    queries = read_topics(dev / "topics.miracl-v1.0-de-dev.tsv")
    qrels_path = dev / "qrels.miracl-v1.0-de-dev.tsv"
    if not qrels_path.is_file():
        raise BenchError(f"{qrels_path}: qrels file missing (see data/bundled/SOURCES.md)")
    require_locked(qrels_path)  # read by analysis.inputs.trec.read_qrels, which knows nothing of the lock
    judged = read_judged_docs(dev / "colbert-kit-judged-pool" / "docs.csv")
    nomiracl, skipped, ambiguous = read_nomiracl([base / "miracl-de-nomiracl" / f for f in NOMIRACL_FILES])
    # 69 NoMIRACL docids are also in the judged pool (SOURCES.md says none; 27 of them differ only in
    # normalisation: no-break spaces, '…' vs '...'). The judged pool's copy is kept, the NoMIRACL one dropped.
    judged_ids = {p.docid for p in judged}
    overlap = [p.docid for p in nomiracl if p.docid in judged_ids]
    nomiracl = [p for p in nomiracl if p.docid not in judged_ids]
    return Sample(
        queries=queries,
        qrels_path=qrels_path,
        judged=judged,
        nomiracl=nomiracl,
        skipped_null_prompts=skipped,
        ambiguous_titles=ambiguous,
        notes={
            "nomiracl_title_rule": NOMIRACL_TITLE_RULE,
            "nomiracl_dropped_as_judged": len(overlap),
            "nomiracl_overlap_rule": "docids in the judged pool keep the judged text, title ''",
        },
    )
