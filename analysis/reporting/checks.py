"""Rules of the plan that compare two measurements or count a judged sample (sections "Quality" and
"Judged sample of unjudged passages"): determinism, the data-type rule and Wilson intervals.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

from analysis.core.plan import (
    CONFIDENCE,
    DETERMINISM_BOUNDARY_PASSES,
    DETERMINISM_MAX_POINTS,
    DTYPE_CHECK_BOUNDARY_PASSES,
    DTYPE_CHECK_MAX_POINTS,
    JUDGED_CONTROL_MIN_AGREEMENT,
    JUDGED_CONTROL_PAIRS,
    RULE_POINTS_DECIMALS,
)

__all__ = ["control_agreement", "determinism", "dtype_rule", "wilson_interval"]


@dataclass(frozen=True)
class RuleResult:
    rule: str
    first: float
    second: float
    difference_points: float
    limit_points: float
    passed: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _points(a: float, b: float) -> float:
    """|a - b| in nDCG points, rounded as ``analysis.core.plan.RULE_POINTS_DECIMALS`` fixes for both rules."""
    return round(abs(a - b) * 100, RULE_POINTS_DECIMALS)


def _within(difference: float, limit: float, boundary_passes: bool) -> bool:
    """The one comparison both rules use; the plan constants say which side of the boundary passes."""
    return difference <= limit if boundary_passes else difference < limit


def determinism(first_ndcg10: float, second_ndcg10: float) -> RuleResult:
    """Second run agrees with the first within 0.1 nDCG@10 points (a difference of exactly 0.1 passes)."""
    d = _points(first_ndcg10, second_ndcg10)
    return RuleResult(
        "determinism: |second - first| <= 0.1 nDCG@10 points",
        first_ndcg10,
        second_ndcg10,
        d,
        DETERMINISM_MAX_POINTS,
        _within(d, DETERMINISM_MAX_POINTS, DETERMINISM_BOUNDARY_PASSES),
    )


def dtype_rule(cpu_fp32_ndcg10: float, gpu_ndcg10: float) -> RuleResult:
    """Plan: if CPU fp32 and GPU differ by less than 0.5 points (20 queries), the GPU value is used for
    CPU points. ``passed`` means the GPU value may be used (a difference of exactly 0.5 fails)."""
    d = _points(cpu_fp32_ndcg10, gpu_ndcg10)
    passed = _within(d, DTYPE_CHECK_MAX_POINTS, DTYPE_CHECK_BOUNDARY_PASSES)
    return RuleResult(
        "dtype: |cpu_fp32 - gpu| < 0.5 nDCG@10 points -> GPU value used for CPU points",
        cpu_fp32_ndcg10,
        gpu_ndcg10,
        d,
        DTYPE_CHECK_MAX_POINTS,
        passed,
    )


def wilson_interval(successes: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval (equals statsmodels ``proportion_confint(method="wilson")``)."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / trials
    z2 = z * z
    denom = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def control_agreement(agreeing: int, pairs: int = JUDGED_CONTROL_PAIRS) -> dict[str, Any]:
    """Plan: fewer than 12 of 15 agreeing control pairs -> the rates are published only with a warning."""
    warn = agreeing < JUDGED_CONTROL_MIN_AGREEMENT
    return {
        "agreeing": agreeing,
        "pairs": pairs,
        "minimum": JUDGED_CONTROL_MIN_AGREEMENT,
        "warning": (
            f"only {agreeing} of {pairs} control pairs agree with the MIRACL judgments (plan minimum "
            f"{JUDGED_CONTROL_MIN_AGREEMENT}); treat the false-negative rates with caution"
        )
        if warn
        else None,
    }
