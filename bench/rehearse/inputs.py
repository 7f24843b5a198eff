"""The rehearsal's inputs: the bundled real German sample, or any corpus in BEIR layout (``--dataset DIR``).

Bundled (``bench.data.bundled.load_sample``): the 305 MIRACL de dev queries and their qrels, the 3,103
judged dev passages (no titles) and the NoMIRACL German passages with titles. BEIR layout: ``corpus.jsonl``
(``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``) and ``qrels/test.tsv`` (header
``query-id corpus-id score``); only queries with judgments are used, as BEIR does. ``max_queries`` keeps the
first n query ids in sorted order (a fast subset for tests); the qrels written into the rehearsal
directory (``qrels.tsv``, TREC format) then hold only those queries, so no metric counts a query that was
never run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.inputs.trec import TrecFormatError, read_qrels
from bench.core.errors import BenchError
from bench.data import Passage, sort_passages
from bench.data.bundled import load_sample
from bench.data.textfile import note_bom, open_text
from bench.integrity.enforce import require_locked

BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")


@dataclass
class Inputs:
    name: str
    queries: dict[str, str]
    corpus: list[Passage]  # import order
    qrels: dict[str, dict[str, int]]
    notes: dict[str, Any] = field(default_factory=dict)

    def write_qrels(self, path: Path) -> Path:
        lines = [f"{q}\t0\t{d}\t{r}\n" for q in sorted(self.qrels) for d, r in sorted(self.qrels[q].items())]
        path.write_text("".join(lines), encoding="utf-8")
        return path


def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    with open_text(path) as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchError(f"{path}:{number}: not a JSON object ({exc})") from exc
            if not isinstance(row, dict) or "_id" not in row:
                raise BenchError(f"{path}:{number}: expected a JSON object with '_id'")
            out.append(row)
    return out


def _beir_qrels(path: Path) -> dict[str, dict[str, int]]:
    """The BEIR qrels through the one qrels reader (``analysis.inputs.trec.read_qrels``: labels,
    duplicates)."""
    note_bom(require_locked(path))  # the reader skips it silently; the rehearsal says so, as for every file
    try:
        return read_qrels(path, layout="beir")
    except TrecFormatError as exc:
        raise BenchError(str(exc)) from exc


def load_beir(directory: Path) -> Inputs:
    missing = [f for f in BEIR_FILES if not (directory / f).is_file()]
    if missing:
        what = "qrels (relevance judgments)" if "qrels/test.tsv" in missing else "files"
        raise BenchError(
            f"{directory}: BEIR layout incomplete, missing {', '.join(missing)}. A rehearsal needs "
            "corpus.jsonl, queries.jsonl and qrels/test.tsv (tab-separated 'query-id corpus-id score' with "
            f"header); without {what} nothing can be evaluated."
        )
    qrels = _beir_qrels(directory / "qrels/test.tsv")
    queries = {str(r["_id"]): str(r.get("text", "")) for r in _jsonl(directory / "queries.jsonl")}
    unknown = sorted(set(qrels) - set(queries))
    if unknown:
        raise BenchError(f"{directory / 'qrels/test.tsv'}: query id {unknown[0]!r} is not in queries.jsonl")
    corpus = [
        Passage(str(r["_id"]), str(r.get("title") or ""), str(r.get("text") or ""))
        for r in _jsonl(directory / "corpus.jsonl")
    ]
    return Inputs(
        name=f"BEIR dataset {directory}",
        queries={q: queries[q] for q in sorted(qrels)},
        corpus=sort_passages(corpus),
        qrels=qrels,
        notes={"layout": "BEIR", "dir": str(directory)},
    )


def load_bundled() -> Inputs:
    sample = load_sample()
    try:
        qrels = read_qrels(sample.qrels_path)
    except TrecFormatError as exc:
        raise BenchError(str(exc)) from exc
    return Inputs(
        name="bundled MIRACL-de sample (data/bundled)",
        queries=dict(sample.queries),
        corpus=sample.corpus,
        qrels=qrels,
        notes={
            "judged_passages": len(sample.judged),
            "nomiracl_passages": len(sample.nomiracl),
            "skipped_null_prompts": sample.skipped_null_prompts,
            "ambiguous_titles": sample.ambiguous_titles,
            **{str(k): v for k, v in sample.notes.items()},
        },
    )


def load_inputs(dataset: Path | None, max_queries: int | None) -> Inputs:
    inputs = load_beir(dataset) if dataset is not None else load_bundled()
    if max_queries is not None:
        if max_queries < 1:
            raise BenchError(f"--max-queries must be at least 1, got {max_queries}")
        keep = sorted(inputs.queries)[:max_queries]
        inputs.queries = {q: inputs.queries[q] for q in keep}
        inputs.qrels = {q: inputs.qrels[q] for q in keep if q in inputs.qrels}
        inputs.notes["max_queries"] = max_queries
    inputs.queries = {q: inputs.queries[q] for q in sorted(inputs.queries)}
    return inputs
