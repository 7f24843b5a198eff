"""The latency numbers the costs section needs, from latency blocks read by :mod:`analysis.latency`.

Machines (the decision figure's groups): ``gpu`` blocks are "GPU" (priced as the Hetzner GEX45; measured on
the RTX 5070 Ti, so an approximation, PLAN.md "Costs"), ``cpu`` blocks "CPU fp32" or, for a target ending
in ``-int8``, "CPU int8" (both priced as the CCX33), ``api`` blocks "API". Blocks of several sessions and
passes of the same (machine, model, k) are pooled. The live-search p95 is the p95 of the per-query sum of
the stage's first-stage time and the reranker time (``analysis.latency.summed_per_query``), never the sum
of two p95s. Every percentile is ``analysis.latency``'s one method.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from analysis.costs.errors import CostInputError
from analysis.latency import Block, billed_tokens_per_query, per_query_ns, summarise, summed_per_query

__all__ = ["MACHINES", "Pooled", "check_queries", "machine_of", "pool"]

# machine -> (server priced, note)
MACHINES: Final = {
    "GPU": ("GEX45", "RTX 5070 Ti latency priced as a Hetzner GEX45 (approximation); capacity a lower bound"),
    "CPU fp32": ("CCX33", "Hetzner CCX33, PyTorch fp32"),
    "CPU int8": ("CCX33", "Hetzner CCX33, OpenVINO int8"),
    "API": (None, "Voyage API, full HTTP time"),
}
INT8_SUFFIX: Final = "-int8"


def machine_of(block: Block) -> tuple[str, str]:
    """(machine, reranker id) of a reranker block."""
    if block.kind == "gpu":
        return "GPU", block.target
    if block.kind == "cpu":
        if block.target.endswith(INT8_SUFFIX):
            return "CPU int8", block.target[: -len(INT8_SUFFIX)]
        return "CPU fp32", block.target
    if block.kind == "api":
        return "API", block.target
    raise ValueError(f"{block.path or block.target}: a {block.kind} block is not a reranker block")


def check_queries(blocks: Iterable[Block], qids: Sequence[str]) -> None:
    """Every measured query is a query of this study; a block from another study directory is refused."""
    known = set(qids)
    for b in blocks:
        foreign = sorted({s.query_id for s in b.samples} - known)
        if foreign:
            raise CostInputError(
                b.path or b.target,
                None,
                f"latency block measured {len(foreign)} quer(y/ies) that this study's qrels do not have "
                f"(e.g. {foreign[0]!r}): it belongs to a different study directory",
                "pass --latency with the results/latency folder of the study whose runs and qrels are read",
            )


@dataclass(frozen=True)
class Pooled:
    """One (machine, model, k): pooled call times, and for the API the billed tokens per query."""

    machine: str
    model: str
    k: int
    blocks: tuple[Block, ...]

    def ns(self) -> list[int]:
        return [s.ns for b in self.blocks for s in b.samples if s.ns is not None]

    def summary(self) -> dict[str, Any]:
        s = summarise(self.ns())
        return {
            **s.to_dict(),
            "failed": sum(1 for b in self.blocks for x in b.samples if x.ns is None),
            "sessions": sorted({b.session for b in self.blocks}),
            "blocks": sorted(b.relpath().as_posix() for b in self.blocks),
            "marks": sorted({m for b in self.blocks for m in b.marks}),
        }

    def billed_tokens(self) -> list[int]:
        return [t for b in self.blocks for t in billed_tokens_per_query(b).values()]

    def live(self, first_stage: Sequence[Block]) -> dict[str, Any]:
        """p95 of first stage + reranker per query; each reranker pass is paired with the first-stage pass
        of the same number, or with the first-stage's first pass where it has no such pass."""
        if not first_stage:
            return {"p95_ms": None, "pairs": 0, "left_out": None, "reason": "no first-stage latency"}
        by_pass = {b.pass_: b for b in sorted(first_stage, key=lambda b: (b.session, b.pass_), reverse=True)}
        sums: list[int] = []
        left_out = 0
        for b in self.blocks:
            fs = by_pass.get(b.pass_, by_pass[min(by_pass)])
            rerank = per_query_ns(b)
            paired = summed_per_query([per_query_ns(fs), rerank])
            sums += paired.values()
            left_out += len(rerank) - len(paired)
        s = summarise(sums)
        reason = None if s.n else "no query has both a first-stage and a reranker time"
        return {"p95_ms": s.p95_ms, "pairs": s.n, "left_out": left_out, "reason": reason}


def pool(blocks: Iterable[Block]) -> tuple[dict[tuple[str, str, int], Pooled], dict[str, list[Block]]]:
    """Reranker blocks pooled by (machine, model, k), and first-stage blocks by stage."""
    groups: dict[tuple[str, str, int], list[Block]] = {}
    stages: dict[str, list[Block]] = {}
    for b in blocks:
        if b.kind == "first-stage":
            stages.setdefault(b.target, []).append(b)
            continue
        machine, model = machine_of(b)
        groups.setdefault((machine, model, b.k), []).append(b)
    pooled = {key: Pooled(*key, tuple(v)) for key, v in sorted(groups.items())}
    return pooled, stages
