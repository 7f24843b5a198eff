"""The plan's wording and winner rules (section "Quality"), and the corpus rule.

* "clearly better": significant after Holm (adjusted p <= 0.05) and at least 2.0 nDCG@10 points better.
* "measurably better": significant after Holm, less than 2.0 points better.
* "on par": not significant after Holm.
* The plan is silent on significantly *worse* models. By symmetry they are "clearly worse" (significant and
  at least 2.0 points worse) or "measurably worse" (significant, less than 2.0 points worse).
* A "winner" exists at a stage and depth only if one model is clearly better than every other reranked model
  of that stage and depth *and* than the first stage. A contamination-flagged winner always carries the
  flag's note (:func:`analysis.core.plan.contamination_note`).
* Hit rates are lower bounds (unjudged relevant passages count as misses): :data:`HIT_RATE_NOTE`.
* Numbers from different corpora are never compared: :func:`require_same_corpus`.

Points are nDCG@10 x 100. The 2.0-point threshold is compared on the 0..1 scale with a tolerance of 1e-12 so
that a difference of exactly 0.02 is not lost to binary rounding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from analysis.core.plan import ALPHA, CLEARLY_BETTER_POINTS, contamination_note, contamination_of

__all__ = [
    "HIT_RATE_NOTE",
    "WORSE_WORDING_NOTE",
    "corpus_of",
    "flag_mark",
    "require_same_corpus",
    "winner",
    "winner_sentence",
    "word",
]

HIT_RATE_NOTE: Final = "Hit rates and recall are lower bounds: unjudged relevant passages count as misses."
WORSE_WORDING_NOTE: Final = (
    "The plan names only better and on-par outcomes; a significantly worse model is worded symmetrically "
    "as 'clearly worse' (>= 2.0 points) or 'measurably worse' (< 2.0 points)."
)
_EPS = 1e-12


def word(mean_difference: float, adjusted_p: float, alpha: float = ALPHA) -> str:
    """Wording for ``model - reference`` (mean nDCG@10 difference on the 0..1 scale, Holm-adjusted p)."""
    threshold = CLEARLY_BETTER_POINTS / 100
    if adjusted_p > alpha or mean_difference == 0:
        return "on par"
    if mean_difference > 0:
        return "clearly better" if mean_difference >= threshold - _EPS else "measurably better"
    return "clearly worse" if -mean_difference >= threshold - _EPS else "measurably worse"


def flag_mark(model_id: str) -> str:
    """ "†" for a contamination-flagged model (marked in every table), else ""."""
    c = contamination_of(model_id)
    return "†" if c is not None and c.flagged else ""


def winner(vs_others: Mapping[str, str], vs_first_stage: str) -> bool:
    """True if the best model is clearly better than every other model (``vs_others``: model -> wording of
    best-vs-model) and than the first stage (``vs_first_stage``: wording of best-vs-first-stage)."""
    return (
        len(vs_others) > 0
        and all(w == "clearly better" for w in vs_others.values())
        and vs_first_stage == "clearly better"
    )


def winner_sentence(stage: str, depth: int, best: str | None, is_winner: bool) -> str:
    """The one sentence a table ends with; a flagged winner carries its note."""
    if best is None or not is_winner:
        return (
            f"No winner at {stage}, depth {depth}: no model is clearly better than every other model "
            "and the first stage."
        )
    text = (
        f"Winner at {stage}, depth {depth}: {best}{flag_mark(best)}, clearly better than every other "
        "model and the first stage."
    )
    note = contamination_note(best)
    return f"{text} Note: {note}" if note else text


def corpus_of(stage: str) -> str:
    """The corpus a stage searches: stage ids end in their corpus (``-71k`` or ``-full``)."""
    for corpus in ("71k", "full"):
        if stage.endswith(f"-{corpus}"):
            return corpus
    raise ValueError(f"stage id {stage!r} does not name its corpus (expected a suffix -71k or -full)")


def require_same_corpus(stage_a: str, stage_b: str) -> None:
    """Refuse a comparison across corpora (plan: numbers from different corpora are never compared)."""
    if corpus_of(stage_a) != corpus_of(stage_b):
        raise ValueError(
            f"{stage_a} and {stage_b} search different corpora; the plan never compares them directly"
        )
