"""analysis.core.plan against PLAN.md's own sentences (sections "Rerankers", "Adapter checks", "Quality")."""

from __future__ import annotations

import re
from pathlib import Path

from analysis.core import plan

PLAN = (Path(__file__).resolve().parents[2] / "PLAN.md").read_text(encoding="utf-8")


def test_statistics_constants() -> None:
    assert "95 % bootstrap intervals (10,000 resamples over queries, seed 20261009)" in PLAN
    assert "paired randomisation test (10,000 sign flips, seed 20261009)" in PLAN
    assert (plan.CONFIDENCE, plan.BOOTSTRAP_RESAMPLES, plan.RANDOMISATION_RESAMPLES, plan.SEED) == (
        0.95,
        10_000,
        10_000,
        20261009,
    )
    assert "alpha 0.05" in PLAN and plan.ALPHA == 0.05
    assert "significant after Holm and at least 2.0 nDCG points" in PLAN and plan.CLEARLY_BETTER_POINTS == 2.0
    assert "nDCG@10 must agree within\n0.1 points" in PLAN or "within 0.1 points" in PLAN.replace("\n", " ")
    assert plan.DETERMINISM_MAX_POINTS == 0.1
    assert "by\nless than 0.5 points" in PLAN or "less than 0.5 points" in PLAN.replace("\n", " ")
    assert plan.DTYPE_CHECK_MAX_POINTS == 0.5
    assert "`ndcg_cut_10` within 0.0001" in PLAN and plan.PYTREC_EVAL_TOLERANCE == 0.0001
    assert "fewer than 12 of the 15 control pairs" in PLAN.replace("\n", " ")
    assert plan.JUDGED_CONTROL_MIN_AGREEMENT == 12 and plan.JUDGED_CONTROL_PAIRS == 15


def test_contamination_flags() -> None:
    text = PLAN.replace("\n", " ")
    pattern = r"Contamination flags \(MTEB model registry, `training_datasets`, read (\S+)\): (.*?)\. Flagged"
    m = re.search(pattern, text)
    assert m is not None and m.group(1) == plan.CONTAMINATION_READ_DATE
    sentence = m.group(2)
    for part in (
        "Qwen3-Reranker 0.6B and 4B: MIRACLReranking",
        "Querit-4B: MIRACLReranking",
        "bge and jina: unknown",
        "mxbai: no MIRACL",
        "gte: not listed",
    ):
        assert part in sentence
    expected = {
        "gte-base": ("not listed", False),
        "bge-v2-m3": ("unknown", False),
        "jina-v3.5": ("unknown", False),
        "qwen3-0.6b": ("MIRACLReranking", True),
        "mxbai-large-v2": ("no MIRACL", False),
        "qwen3-4b": ("MIRACLReranking", True),
        "querit-4b": ("MIRACLReranking", True),
        "voyage-rerank-3": ("unknown", False),
        "voyage-rerank-3-lite": ("unknown", False),
    }
    assert {k: tuple(v) for k, v in plan.CONTAMINATION.items()} == expected
    assert plan.contamination_note("qwen3-4b") and not plan.contamination_note("bge-v2-m3")
