"""The ``ef`` rule of vector search (plan: "ef is raised until the top-100 overlap with exact search is at
least 99 %").

The ladder starts at ef = k = 100 and doubles. On a server that does not honour ``ef`` (before 26.0) the
parameter is never sent (it would be silently ignored): the server's default is measured once; if that
already meets the rule the stage runs with ``ef`` recorded as not sent, otherwise the stage is refused
naming ``ef``. Independently, if raising ``ef`` leaves every result list unchanged while the rule is
not met, the loop stops with an error instead of climbing the ladder for nothing.

Rehearsal only (``exact_substitute``): when the server lacks ``ef`` and its default misses the rule, the
rehearsal may ask the server for exact (flat) search instead; the overlap is measured like any other step,
the substitution is recorded loudly (``substitute``), and the stage is still refused if it misses the rule.
A measurement never substitutes: it runs only against the pinned server, which honours ``ef``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.core.errors import BenchError
from bench.core.plan import EF_MIN_OVERLAP, FIRST_STAGE_DEPTH
from bench.firststage.definitions import EF_LADDER
from bench.firststage.exact import overlap_at_k
from bench.firststage.features import FEATURES, StageRefused, supports

Measure = Callable[[int | None], list[list[str]]]  # ef (None: not sent) -> top-k ids per query


@dataclass
class EfChoice:
    ef: int | None  # None: not sent, the server's default search breadth
    overlap: float
    ef_sent: bool
    steps: list[dict[str, Any]] = field(default_factory=list)
    substitute: str | None = None  # rehearsal only: what replaced raising ef

    def record(self) -> dict[str, Any]:
        return {
            "substitute": self.substitute,
            "ef": self.ef,
            "ef_sent": self.ef_sent,
            "overlap": self.overlap,
            "target": EF_MIN_OVERLAP,
            "k": FIRST_STAGE_DEPTH,
            "steps": self.steps,
            "rule": "raise ef (100, doubling) until mean top-100 overlap with exact cosine search >= 0.99",
        }


def choose_ef(
    stage: str,
    server_version: str,
    measure: Measure,
    exact: list[list[str]],
    *,
    target: float = EF_MIN_OVERLAP,
    ladder: Sequence[int] = EF_LADDER,
    send_ef: bool | None = None,
    exact_substitute: tuple[str, Callable[[], list[list[str]]]] | None = None,
) -> EfChoice:
    """Smallest ef on the ladder that meets ``target``; ``send_ef`` overrides the version check (tests)."""
    ef_ok = supports(server_version, "ef") if send_ef is None else send_ef
    steps: list[dict[str, Any]] = []
    candidates: Sequence[int | None] = list(ladder) if ef_ok else [None]
    prev: tuple[int | None, list[list[str]]] | None = None
    for ef in candidates:
        results = measure(ef)
        ov = overlap_at_k(results, exact, FIRST_STAGE_DEPTH)
        steps.append({"ef": ef, "overlap": ov})
        if ov >= target:
            return EfChoice(ef, ov, ef is not None, steps)
        if prev is not None and results == prev[1]:
            raise BenchError(
                f"stage {stage}: raising ef from {prev[0]} to {ef} changed no result list (overlap {ov:.4f} "
                f"< {target}); Typesense {server_version} ignores ef. Stopped instead of climbing the ladder."
            )
        prev = (ef, results)
    if not ef_ok:
        if exact_substitute is not None:
            label, measure_exact = exact_substitute
            ov = overlap_at_k(measure_exact(), exact, FIRST_STAGE_DEPTH)
            steps.append({"ef": None, "substitute": label, "overlap": ov})
            if ov >= target:
                return EfChoice(None, ov, False, steps, substitute=label)
        raise StageRefused(
            stage,
            server_version,
            [FEATURES["ef"]],
            reason=f"The top-100 overlap with exact search at the server default is "
            f"{steps[-1]['overlap']:.4f} < {target}, so ef would have to be raised.",
        )
    raise BenchError(f"stage {stage}: overlap {steps[-1]['overlap']:.4f} < {target} even at ef={ladder[-1]}")
