"""Frozen first-stage candidates (plan section "Quality": every reranker sees the same top 100).

On the first start of a study each first-stage run file is read once, copied byte for byte into
``<study>/candidates/<stage>.trec`` and its SHA-256 written to ``<study>/candidates.json``. Every later
start (a resume) recomputes the SHA-256 of the source file and of the frozen copy and refuses to go on if
either changed: scores in the journal belong to exactly those candidates. The rerankers read the frozen
copy, never the source again.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from analysis.inputs.trec import TrecFormatError, read_run
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import QUALITY_DEPTH
from bench.integrity.hashing import sha256_file

CANDIDATES_JSON = "candidates.json"
CANDIDATES_DIR = "candidates"


@dataclass(frozen=True)
class Candidates:
    """stage -> qid -> docids (first-stage order, at most ``QUALITY_DEPTH``), and the files' SHA-256."""

    lists: Mapping[str, Mapping[str, tuple[str, ...]]]
    sha256: Mapping[str, str]

    def qids(self, stage: str) -> list[str]:
        return list(self.lists[stage])


def _read_lists(path: Path, depth: int) -> dict[str, tuple[str, ...]]:
    try:
        run = read_run(path, allow_unknown_queries=True)
    except TrecFormatError as exc:
        raise BenchError(f"first-stage run {exc}") from exc
    return {qid: tuple(d for d, _ in rows[:depth]) for qid, rows in run.items()}


def freeze(study_dir: Path, sources: Mapping[str, Path], *, depth: int = QUALITY_DEPTH) -> Candidates:
    """Freeze ``sources`` (stage -> run file) into ``study_dir``, or check an earlier freeze and load it.

    Raises ``BenchError`` when a source is missing, malformed, or differs from what the study froze, and
    when the study froze a different set of stages.
    """
    record_path = study_dir / CANDIDATES_JSON
    frozen_dir = study_dir / CANDIDATES_DIR
    for stage, src in sources.items():
        if not Path(src).is_file():
            raise BenchError(
                f"first-stage run for {stage} missing: {src}. Run `{hint(f'first-stage {stage}')}` first "
                "(or pass the file)."
            )
    if record_path.exists():
        recorded = _read_record(record_path)
        _check_recorded(recorded, sources, study_dir)
    else:
        frozen_dir.mkdir(parents=True, exist_ok=True)
        recorded = {"depth": depth, "stages": {}}
        for stage, src in sources.items():
            dest = frozen_dir / f"{stage}.trec"
            shutil.copyfile(src, dest)
            with open(dest, "rb") as fh:
                os.fsync(fh.fileno())
            digest = sha256_file(dest)
            if sha256_file(src) != digest:
                raise BenchError(f"{src} changed while it was being copied into {dest}; start again")
            recorded["stages"][stage] = {"source": str(src), "sha256": digest}
        write_json_atomic(record_path, recorded)
    lists = {s: _read_lists(frozen_dir / f"{s}.trec", int(recorded["depth"])) for s in sources}
    return Candidates(lists=lists, sha256={s: recorded["stages"][s]["sha256"] for s in sources})


def _read_record(path: Path) -> dict[str, Any]:
    """``candidates.json``, or a BenchError naming the file and how to recover (it is written atomically,
    so damage means an edit, a disk fault or a copy gone wrong)."""
    recover = (
        "It is written atomically, so the file was edited or damaged. Restore it from a backup or copy of "
        f"this study, or start a new study directory (the journal in {path.parent} holds scores of exactly "
        "the candidates recorded there, so it cannot be rebuilt from the current first-stage runs)."
    )
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchError(f"{path}: not valid JSON ({exc}). {recover}") from None
    stages = data.get("stages") if isinstance(data, dict) else None
    ok = (
        isinstance(stages, dict)
        and isinstance(data.get("depth"), int)
        and all(isinstance(v, dict) and isinstance(v.get("sha256"), str) for v in stages.values())
    )
    if not ok:
        raise BenchError(f"{path}: not a candidates record ('depth', 'stages' with 'sha256'). {recover}")
    return data


def _check_recorded(recorded: Mapping[str, Any], sources: Mapping[str, Path], study_dir: Path) -> None:
    stages = recorded["stages"]
    if set(stages) != set(sources):
        raise BenchError(
            f"{study_dir} froze candidates for stages {sorted(stages)}, this run asks for {sorted(sources)}. "
            "Resume with the same stages, or start a new study directory."
        )
    for stage, src in sources.items():
        want = stages[stage]["sha256"]
        copy = study_dir / CANDIDATES_DIR / f"{stage}.trec"
        if not copy.is_file() or sha256_file(copy) != want:
            raise BenchError(
                f"{copy}: the frozen candidates of {stage} are missing or were modified (SHA-256 {want} "
                "recorded). The study cannot be resumed; start a new study directory."
            )
        now = sha256_file(src)
        if now != want:
            raise BenchError(
                f"{src} changed since this study froze it (SHA-256 {want} recorded in "
                f"{study_dir / CANDIDATES_JSON}, {now} now). Refusing to resume: the journal's scores belong "
                "to the old candidates. Restore the file, or start a new study directory for the new run."
            )


def check_queries(
    candidates: Candidates,
    queries: Mapping[str, str],
    stages: Sequence[str],
    *,
    only: Collection[str] | None = None,
) -> None:
    """Every candidate query (of ``only``, if given) must have a query text."""
    for stage in stages:
        missing = [q for q in candidates.lists[stage] if q not in queries and (only is None or q in only)]
        if missing:
            raise BenchError(
                f"first-stage run of {stage} has {len(missing)} query id(s) without a query text "
                f"(first: {missing[0]!r}); use the run made from the same topics file"
            )
