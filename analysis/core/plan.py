"""The plan's statistics and wording constants that ``analysis`` needs (PLAN.md, sections "Rerankers",
"Adapter checks", "Quality" and "Judged sample of unjudged passages").

``analysis`` never imports ``bench``; ``bench/core/plan.py`` imports these names from here, so each value
exists once. Nothing here may differ from PLAN.md.
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
INT8_MODEL: Final = f"{INT8_FP32_MODEL}-int8"  # the variant's id: its one spelling (bench uses it too)


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
    """The sentence a flagged model (or a variant of one, :data:`RUN_IDS`) carries wherever it is named a
    winner."""
    c = contamination_of(model_id)
    if c is None or not c.flagged:
        return ""
    base = RUN_IDS[model_id].base
    whose = model_id if base == model_id else f"{model_id} (a variant of {base})"
    return (
        f"{whose} lists {c.note} among its training data (MTEB model registry, read "
        f"{CONTAMINATION_READ_DATE}); its MIRACL-de numbers may be inflated."
    )


# --- Pitfalls experiment (PLAN.md "Pitfalls experiment") -------------------------------------------------
# Run ids of the declared Qwen3-Reranker-0.6B variants (bench.rerankers.decoder.PITFALL_VARIANTS builds
# them); run files <runs>/hybrid-71k/<id>@<k>.trec in their own runs folder, analysed as their own family.
PITFALL_RUN_IDS: Final = (
    "qwen3-0.6b.pitfall-a-model-card",
    "qwen3-0.6b.pitfall-b-empty-instruction",
    "qwen3-0.6b.pitfall-c-right-padding",
    "qwen3-0.6b.pitfall-d1-256-passage-cut",
    "qwen3-0.6b.pitfall-d2-256-input-end-cut",
)
PITFALL_REFERENCE: Final = PITFALL_RUN_IDS[0]  # variant (a), correct per the model card
PITFALL_TYPESENSE: Final = ("keyword-plain-71k", "keyword-71k")  # (run, reference): first-stage runs


# --- Run ids: which `<model>@<k>.trec` names a study may hold ---------------------------


class RunId(NamedTuple):
    """A name a reranked run file may carry. ``base``: the plan model whose contamination flag the run
    carries (a variant of a plan model is flagged like it); None for a rehearsal stand-in."""

    base: str | None
    what: str


# The plan's rerankers, the rehearsal's declared stand-ins and the variants other plan sections run. Add a
# new variant here in one line; `analysis report` refuses every other name (naming the file and these ids).
RUN_IDS: Final = MappingProxyType(
    {
        **{m: RunId(m, "plan reranker (section Rerankers)") for m in CONTAMINATION},
        "minilm-standin": RunId(None, "rehearsal stand-in: all-MiniLM-L6-v2 bi-encoder (README, rehearsal)"),
        "bm25-standin": RunId(None, "rehearsal stand-in: BM25 over the rehearsal corpus (docs/rehearsal.md)"),
        INT8_MODEL: RunId(INT8_FP32_MODEL, "OpenVINO int8 variant of bge-v2-m3 (section OpenVINO int8)"),
        **{v: RunId("qwen3-0.6b", "declared Qwen3 variant (section Pitfalls)") for v in PITFALL_RUN_IDS},
    }
)


STANDIN_MARK: Final = "‡"  # a declared rehearsal stand-in, never a plan model


def is_standin(run_id: str | None) -> bool:
    """A declared rehearsal stand-in (no plan model behind it), marked in every quality table and figure."""
    entry = RUN_IDS.get(run_id) if run_id is not None else None
    return entry is not None and entry.base is None


def contamination_of(run_id: str) -> Contamination | None:
    """The contamination record a run id carries (its base model's); None for stand-ins and unknown ids."""
    entry = RUN_IDS.get(run_id)
    return None if entry is None or entry.base is None else CONTAMINATION.get(entry.base)


# --- The embedder's contamination -------------------------------------------------------
# Plan section "Rerankers": "Arctic-l-v2.0: MIRACLRetrieval, MIRACLRetrievalHardNegatives, MIRACLReranking";
# "Flagged models are marked in every table". Arctic embeds the passages of the vector and hybrid stages, so
# their first-stage rows carry the mark.
EMBEDDER: Final = "Arctic-l-v2.0"
EMBEDDING_CONTAMINATION: Final = Contamination(
    "MIRACLRetrieval, MIRACLRetrievalHardNegatives, MIRACLReranking", True
)
EMBEDDING_STAGES: Final = ("vector-71k", "hybrid-71k")


def embedder_note() -> str:
    return (
        f"the {EMBEDDER} embedder of this stage lists {EMBEDDING_CONTAMINATION.note} among its "
        f"training data (MTEB model registry, read {CONTAMINATION_READ_DATE})"
    )


# --- Boundary convention of the two comparison rules (section "Quality"), written once ---------------------
# Both rules compare |first - second| in nDCG points (0..100 scale), rounded to RULE_POINTS_DECIMALS decimals
# so that float noise (0.5 - 0.501 gives 0.1000000000000009 points) lands on the boundary, never beside it.
# On the boundary: "within 0.1 points" (determinism) passes; "less than 0.5 points" (data type) fails.
RULE_POINTS_DECIMALS: Final = 9
DETERMINISM_BOUNDARY_PASSES: Final = True  # plan: "must agree within 0.1 points"
DTYPE_CHECK_BOUNDARY_PASSES: Final = False  # plan: "differs by less than 0.5 points"


# --- Costs (plan section "Costs"); bench/core/plan.py re-exports these
# ----------------------------------------

SECONDS_PER_MONTH: Final = 2_592_000
UTILISATIONS: Final = (1.0, 0.5)
CCX33_EUR_PER_MONTH: Final = 138.49
GEX45_EUR_PER_MONTH: Final = 212.30
GEX45_EUR_EXTRA_PER_MONTH: Final = 1.70
GEX45_EUR_SETUP: Final = 209.0
LIVE_SEARCH_P95_MS: Final = 500
CHAT_RERANK_P95_MS: Final = 2_000
CONTEXT_REFERENCE_K: Final = 5
CONTEXT_REFERENCE_LLMS: Final = 2

# --- Latency budgets (plan section "Costs": "Latency budgets (assumption)") ---------------------------------
LATENCY_BUDGET_LIVE_P95_MS: Final = LIVE_SEARCH_P95_MS  # live search p95 in total (first stage plus reranker)
LATENCY_BUDGET_CHAT_P95_MS: Final = CHAT_RERANK_P95_MS  # chat p95 for the reranking step
