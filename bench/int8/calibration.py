"""The calibration set: 300 (query, passage) pairs, seed 20261009 (plan section "OpenVINO int8 variant").

Study: MIRACL German test-B queries (no judgments; checked disjoint from dev) paired with random passages
of the full corpus outside the 71k corpus (checked). Rehearsal: NoMIRACL German test queries (bundled;
checked disjoint from dev) paired with bundled NoMIRACL passages outside the judged pool. Both are drawn by
``draw_pairs`` with one ``np.random.default_rng(seed)``: n distinct queries (sorted ids, then drawn without
replacement) and n distinct passages (import order, drawn without replacement), paired in draw order.

The file holds ids and the SHA-256 of each text used (results contain ids and numbers only); the texts are
looked up again from the same sources when quantising, and a hash that differs is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.core.atomic import write_json_atomic
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import INT8_CALIBRATION_PAIRS
from bench.data import Passage

CALIBRATION_PAIRS = INT8_CALIBRATION_PAIRS  # plan: 300
FORMAT = "int8-calibration-set/1"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CalibrationSet:
    source: str  # "miracl test-B + full corpus outside 71k" or the rehearsal's
    seed: int
    pairs: tuple[tuple[str, str], ...]  # (query id, passage id)
    query_sha256: tuple[str, ...]
    passage_sha256: tuple[str, ...]  # of the plan's passage text, title + "\n" + text
    checks: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "source": self.source,
            "seed": self.seed,
            "n": len(self.pairs),
            "pairs": [
                {"query_id": q, "docid": d, "query_sha256": qs, "passage_sha256": ps}
                for (q, d), qs, ps in zip(self.pairs, self.query_sha256, self.passage_sha256, strict=True)
            ],
            "checks": dict(self.checks),
        }

    def digest(self) -> str:
        """SHA-256 of the canonical JSON: what a quantised folder's manifest names."""
        return text_sha256(json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False))

    def texts(
        self, queries: Mapping[str, str], passages: Mapping[str, str], where: str
    ) -> list[tuple[str, str]]:
        """The (query, passage) texts, each checked against its recorded SHA-256."""
        out = []
        for (qid, docid), qs, ps in zip(self.pairs, self.query_sha256, self.passage_sha256, strict=True):
            if qid not in queries or docid not in passages:
                raise BenchError(f"{where}: calibration pair ({qid}, {docid}) not found in the sources")
            q, p = queries[qid], passages[docid]
            if text_sha256(q) != qs or text_sha256(p) != ps:
                raise BenchError(
                    f"{where}: the text of ({qid}, {docid}) differs from the SHA-256 recorded in the "
                    "calibration "
                    "set; the sources changed: build the calibration set again"
                )
            out.append((q, p))
        return out


def draw_pairs(
    queries: Mapping[str, str],
    passages: Sequence[Passage],
    *,
    n: int,
    seed: int,
    source: str,
    dev_queries: Iterable[str],
    excluded_passages: Iterable[str],
    excluded_name: str,
) -> CalibrationSet:
    """n (query, passage) pairs; refuses queries that overlap dev and passages inside the excluded pool."""
    dev = set(dev_queries)
    overlap = sorted(set(queries) & dev)
    if overlap:
        raise BenchError(
            f"{source}: {len(overlap)} calibration queries are dev queries (e.g. {overlap[0]}); "
            "the calibration set must be disjoint from dev"
        )
    excluded = set(excluded_passages)
    pool = [p for p in passages if p.docid not in excluded]
    if len(queries) < n or len(pool) < n:
        raise BenchError(
            f"{source}: {len(queries)} queries and {len(pool)} passages outside {excluded_name}; "
            f"{n} of each are needed"
        )
    rng = np.random.default_rng(seed)
    qids = sorted(queries)
    chosen_q = [qids[i] for i in rng.choice(len(qids), size=n, replace=False)]
    chosen_p = [pool[i] for i in rng.choice(len(pool), size=n, replace=False)]
    return CalibrationSet(
        source=source,
        seed=seed,
        pairs=tuple((q, p.docid) for q, p in zip(chosen_q, chosen_p, strict=True)),
        query_sha256=tuple(text_sha256(queries[q]) for q in chosen_q),
        passage_sha256=tuple(text_sha256(p.passage_text) for p in chosen_p),
        checks={
            "queries_available": len(queries),
            "dev_overlap": 0,
            "passages_available": len(pool),
            f"passages_in_{excluded_name}": 0,
            "rng": "numpy.random.default_rng (PCG64)",
        },
    )


def write_set(path: Path, cal: CalibrationSet) -> None:
    write_json_atomic(path, cal.to_dict())


def read_set(path: Path, *, dev_queries: Iterable[str] = ()) -> CalibrationSet:
    """A calibration set file; refuses a missing file, another format and any query that is a dev query."""
    if not path.is_file():
        raise BenchError(f"{path}: no calibration set; run `{hint('int8 calibration-set')}` first")
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchError(
            f"{path}: not valid JSON ({exc}); build it again with `{hint('int8 calibration-set')}`"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("pairs"), list):
        raise BenchError(f"{path}: not a calibration set (format {FORMAT!r} with 'pairs' expected)")
    try:
        rows = [
            (str(r["query_id"]), str(r["docid"]), str(r["query_sha256"]), str(r["passage_sha256"]))
            for r in data["pairs"]
        ]
    except (KeyError, TypeError) as exc:
        raise BenchError(f"{path}: a pair lacks query_id, docid, query_sha256 or passage_sha256") from exc
    dev = set(dev_queries)
    bad = [r[0] for r in rows if r[0] in dev]
    if bad:
        raise BenchError(
            f"{path}: {len(bad)} calibration queries are dev queries (e.g. {bad[0]}); the plan "
            "requires a calibration set disjoint from dev: build it again"
        )
    return CalibrationSet(
        source=str(data.get("source", "")),
        seed=int(data["seed"]),
        pairs=tuple((r[0], r[1]) for r in rows),
        query_sha256=tuple(r[2] for r in rows),
        passage_sha256=tuple(r[3] for r in rows),
        checks=dict(data.get("checks", {})),
    )
