"""The plan's statistics and wording constants that ``analysis`` needs (PLAN.md, sections "Rerankers",
"Adapter checks", "Quality" and "Judged sample of unjudged passages").

``analysis`` never imports ``bench``; ``bench/plan.py`` imports these names from here, so each value exists
once. Nothing here may differ from PLAN.md.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final, NamedTuple

SEED: Final = 20261009
BOOTSTRAP_RESAMPLES: Final = 10_000
CONFIDENCE: Final = 0.95
RANDOMISATION_RESAMPLES: Final = 10_000
ALPHA: Final = 0.05
CLEARLY_BETTER_POINTS: Final = 2.0  # nDCG points (0.020 on the 0..1 scale)
DETERMINISM_MAX_POINTS: Final = 0.1
DTYPE_CHECK_MAX_POINTS: Final = 0.5
PYTREC_EVAL_TOLERANCE: Final = 0.0001  # adapter check 2: nDCG@10 against pytrec_eval ndcg_cut_10
JUDGED_CONTROL_MIN_AGREEMENT: Final = 12  # of 15 control pairs
JUDGED_CONTROL_PAIRS: Final = 15
WORDING: Final = ("clearly better", "measurably better", "on par")
MAIN_METRIC: Final = "ndcg@10"
INTERVAL_METRICS: Final = ("ndcg@10", "hit@5")
QUALITY_DEPTH: Final = 100
DEPTHS: Final = (20, 50, 100)

# OpenVINO int8 variant: "Quality measured on the desktop (305 queries, hybrid-71k, k = 100) against the fp32
# model"; the variant is bge-reranker-v2-m3.
INT8_QUALITY_STAGE: Final = "hybrid-71k"
INT8_QUALITY_DEPTH: Final = 100
INT8_QUALITY_QUERIES: Final = 305
INT8_FP32_MODEL: Final = "bge-v2-m3"


class Contamination(NamedTuple):
    """MTEB model registry ``training_datasets``, read 2026-10-09 (plan section "Rerankers")."""

    note: str
    flagged: bool  # marked in every table; never called a winner without ``note``


CONTAMINATION_READ_DATE: Final = "2026-10-09"
CONTAMINATION: Final = MappingProxyType(
    {
        "gte-base": Contamination("not listed", False),
        "bge-v2-m3": Contamination("unknown", False),
        "jina-v3.5": Contamination("unknown", False),
        "qwen3-0.6b": Contamination("MIRACLReranking", True),
        "mxbai-large-v2": Contamination("no MIRACL", False),
        "qwen3-4b": Contamination("MIRACLReranking", True),
        "querit-4b": Contamination("MIRACLReranking", True),
        "voyage-rerank-3": Contamination("unknown", False),
        "voyage-rerank-3-lite": Contamination("unknown", False),
    }
)


def contamination_note(model_id: str) -> str:
    """The sentence a flagged model carries wherever it is named a winner."""
    c = CONTAMINATION.get(model_id)
    if c is None or not c.flagged:
        return ""
    return (
        f"{model_id} lists {c.note} among its training data (MTEB model registry, read "
        f"{CONTAMINATION_READ_DATE}); its MIRACL-de numbers may be inflated."
    )

# --- Latency budgets (plan section "Costs": "Latency budgets (assumption)") ---------------------------------
LATENCY_BUDGET_LIVE_P95_MS: Final = 500  # live search p95 in total (first stage plus reranker)
LATENCY_BUDGET_CHAT_P95_MS: Final = 2_000  # chat p95 for the reranking step
