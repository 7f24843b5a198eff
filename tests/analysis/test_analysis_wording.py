"""Wording and winner rules, the corpus rule, determinism, the data-type rule, Wilson intervals."""

from __future__ import annotations

import pytest

from analysis.core.plan import CONTAMINATION
from analysis.reporting.checks import control_agreement, determinism, dtype_rule, wilson_interval
from analysis.reporting.wording import (
    corpus_of,
    flag_mark,
    require_same_corpus,
    winner,
    winner_sentence,
    word,
)


@pytest.mark.parametrize(
    ("diff", "p", "expected"),
    [
        (0.02, 0.01, "clearly better"),
        (0.0199999999999999, 0.01, "clearly better"),  # 2.0 points up to binary rounding
        (0.0199, 0.01, "measurably better"),
        (0.03, 0.0500001, "on par"),
        (0.03, 0.05, "clearly better"),  # adjusted p <= alpha is significant
        (-0.021, 0.001, "clearly worse"),
        (-0.005, 0.001, "measurably worse"),
        (0.0, 0.0, "on par"),
        (-0.5, 0.9, "on par"),
    ],
)
def test_word(diff: float, p: float, expected: str) -> None:
    assert word(diff, p) == expected


def test_winner_and_flags() -> None:
    assert winner({"a": "clearly better", "b": "clearly better"}, "clearly better")
    assert not winner({"a": "clearly better", "b": "measurably better"}, "clearly better")
    assert not winner({"a": "clearly better"}, "on par")
    assert not winner({}, "clearly better")
    flagged = [m for m, c in CONTAMINATION.items() if c.flagged]
    assert sorted(flagged) == ["querit-4b", "qwen3-0.6b", "qwen3-4b"]
    assert flag_mark("qwen3-4b") == "†" and flag_mark("bge-v2-m3") == ""
    s = winner_sentence("hybrid-71k", 100, "qwen3-4b", True)
    assert "qwen3-4b†" in s and "MIRACLReranking" in s and "Note:" in s
    assert "Note" not in winner_sentence("hybrid-71k", 100, "bge-v2-m3", True)
    assert winner_sentence("hybrid-71k", 100, "qwen3-4b", False).startswith("No winner")


def test_corpora_never_compared() -> None:
    assert corpus_of("keyword-full") == "full" and corpus_of("hybrid-71k") == "71k"
    require_same_corpus("keyword-71k", "vector-71k")
    with pytest.raises(ValueError, match="different corpora"):
        require_same_corpus("keyword-71k", "keyword-full")
    with pytest.raises(ValueError, match="suffix"):
        corpus_of("keyword")


def test_determinism_and_dtype_rules() -> None:
    assert determinism(0.5, 0.501).passed  # exactly 0.1 points passes
    assert not determinism(0.5, 0.50101).passed
    assert dtype_rule(0.6, 0.6049).passed
    assert not dtype_rule(0.6, 0.605).passed  # plan: "less than 0.5 points"
    assert determinism(0.4, 0.4).as_dict()["difference_points"] == 0.0


@pytest.mark.parametrize(
    ("k", "n"), [(0, 15), (1, 15), (7, 15), (14, 15), (15, 15), (3, 45), (44, 45), (1, 1)]
)
def test_wilson_equals_statsmodels(k: int, n: int) -> None:
    from statsmodels.stats.proportion import proportion_confint  # heavy: not at collection

    low, high = wilson_interval(k, n)
    ref_low, ref_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert low == pytest.approx(max(0.0, ref_low), abs=1e-14)
    assert high == pytest.approx(min(1.0, ref_high), abs=1e-14)
    with pytest.raises(ValueError):
        wilson_interval(5, 4)


def test_control_agreement() -> None:
    assert control_agreement(12)["warning"] is None
    assert "11 of 15" in control_agreement(11)["warning"]
