"""Which (query, passage) pairs the judge sees (plan section "Judged sample of unjudged passages").

The plan's selection, exactly: on hybrid-71k the three best rated models by nDCG@10 (depth 100), 15 random
unjudged passages each from ranks 1 to 3; on keyword-full 15 unjudged passages from ranks 1 to 3 of the best
rated model there; 15 judged control pairs (8 relevant, 7 not relevant). A group with fewer candidates than
it needs gives all of them, and the selection says so (``short``).

Every draw uses a fresh ``numpy.random.default_rng(20261009)`` (the plan's seed) on the group's candidates
in a canonical order (qid, rank, docid as strings; see ``DRAW_PROCEDURE``), so a draw does not depend on the
other groups or on the order they are listed in. Control pairs are drawn from the judged pairs at ranks 1 to
3 of the same runs (the sample's own neighbourhood, so that a control reads like any other pair):
relevant (MIRACL relevance > 0) and not relevant (0) separately.

Duplicates (the same query and passage from two groups) become one pair that counts in both groups. The
pairs are numbered 1..n in an order shuffled with the same seed, so the pair number says nothing about the
group. The control pool and the draw procedure are deviation D-030 (the plan is silent on them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.core.plan import (
    JUDGED_CONTROL_NOT_RELEVANT,
    JUDGED_CONTROL_RELEVANT,
    JUDGED_SAMPLE_MAX_RANK,
    JUDGED_SAMPLE_PER_GROUP,
    SEED,
)

CONTROL_RELEVANT = "control-relevant"
CONTROL_NOT_RELEVANT = "control-not-relevant"
DRAW_PROCEDURE = (
    "per draw: candidates sorted by (qid, rank, docid); rng = numpy.random.default_rng(seed); "
    "idx = rng.choice(len(candidates), size=n, replace=False) if len(candidates) > n else all; "
    "pairs in draw order; shuffle: unique pairs sorted by (qid, docid), "
    "order = numpy.random.default_rng(seed).permutation(len(pairs)), pair number = position + 1"
)

Ranked = Mapping[str, Sequence[str]]  # qid -> docids in rank order
PairKey = tuple[str, str]  # (qid, docid)


@dataclass(frozen=True)
class GroupSpec:
    """One group of the sample: an id (``<stage>/<model>@<k>``) and its run in rank order."""

    group: str
    run: Ranked


@dataclass(frozen=True)
class DrawnGroup:
    group: str
    kind: str  # "unjudged" or "control"
    candidates: int
    wanted: int
    drawn: list[PairKey]

    @property
    def short(self) -> bool:
        return self.candidates < self.wanted

    def record(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "candidates": self.candidates,
            "wanted": self.wanted,
            "drawn": len(self.drawn),
            "short": self.short,
        }


@dataclass(frozen=True)
class SelectedPair:
    pair: int  # 1..n, shuffled
    qid: str
    docid: str
    groups: tuple[str, ...]
    control: int | None  # MIRACL label of a control pair (1 relevant, 0 not); None for an unjudged pair


@dataclass(frozen=True)
class Selection:
    groups: list[DrawnGroup]
    pairs: list[SelectedPair]

    def record(self) -> dict[str, Any]:
        return {g.group: g.record() for g in self.groups}

    def notes(self) -> list[str]:
        return [
            f"group {g.group}: only {g.candidates} candidate(s) for {g.wanted}; all taken"
            for g in self.groups
            if g.short
        ]


def top_pairs(run: Ranked, max_rank: int) -> list[tuple[str, int, str]]:
    """(qid, rank, docid) of ranks 1..max_rank, in canonical order."""
    return sorted((q, r, d) for q, docs in run.items() for r, d in enumerate(docs[:max_rank], start=1))


def draw(candidates: Sequence[tuple[str, int, str]], n: int, seed: int = SEED) -> list[PairKey]:
    """``n`` of ``candidates`` (already in canonical order) without replacement, fresh generator."""
    if len(candidates) <= n:
        return [(q, d) for q, _, d in candidates]
    idx = np.random.default_rng(seed).choice(len(candidates), size=n, replace=False)
    return [(candidates[i][0], candidates[i][2]) for i in idx.tolist()]


def unjudged(
    run: Ranked, qrels: Mapping[str, Mapping[str, int]], max_rank: int
) -> list[tuple[str, int, str]]:
    return [(q, r, d) for q, r, d in top_pairs(run, max_rank) if d not in qrels.get(q, {})]


def select(
    groups: Sequence[GroupSpec],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    per_group: int = JUDGED_SAMPLE_PER_GROUP,
    max_rank: int = JUDGED_SAMPLE_MAX_RANK,
    control_relevant: int = JUDGED_CONTROL_RELEVANT,
    control_not_relevant: int = JUDGED_CONTROL_NOT_RELEVANT,
    seed: int = SEED,
) -> Selection:
    """The plan's selection over ``groups`` (see the module docstring)."""
    if len({g.group for g in groups}) != len(groups):
        raise ValueError("group ids must be unique")
    drawn: list[DrawnGroup] = []
    for g in groups:
        cands = unjudged(g.run, qrels, max_rank)
        drawn.append(DrawnGroup(g.group, "unjudged", len(cands), per_group, draw(cands, per_group, seed)))
    judged: dict[tuple[str, str], tuple[str, int, str]] = {}
    for g in groups:
        for q, r, d in top_pairs(g.run, max_rank):
            if d in qrels.get(q, {}):
                key = (q, d)
                judged[key] = min(judged.get(key, (q, r, d)), (q, r, d))  # best rank over the runs
    pool = sorted(judged.values())
    for name, want, is_rel in (
        (CONTROL_RELEVANT, control_relevant, True),
        (CONTROL_NOT_RELEVANT, control_not_relevant, False),
    ):
        cands = [c for c in pool if (qrels[c[0]][c[2]] > 0) == is_rel]
        drawn.append(DrawnGroup(name, "control", len(cands), want, draw(cands, want, seed)))
    members: dict[PairKey, list[str]] = {}
    for dg in drawn:
        for key in dg.drawn:
            members.setdefault(key, []).append(dg.group)
    unique = sorted(members)
    order = np.random.default_rng(seed).permutation(len(unique)).tolist()
    pairs = []
    for number, i in enumerate(order, start=1):
        q, d = unique[i]
        rel = qrels.get(q, {}).get(d)
        pairs.append(
            SelectedPair(number, q, d, tuple(members[(q, d)]), None if rel is None else int(rel > 0))
        )
    return Selection(drawn, pairs)
