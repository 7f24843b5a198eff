"""Every value of PLAN.md that code uses, typed, in one place.

Plan sections: all. Nothing here may differ from PLAN.md; ``tests/test_plan_constants.py`` parses PLAN.md
and checks every value below against it, so this module and the plan cannot drift apart. Values the plan
leaves to measurement (digests of Python base images, prices on the measurement day, ...) are *not* here:
they are measured and recorded by the commands that need them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from analysis.core import plan as _stats

PLAN_TITLE: Final = "Measurement plan: German rerankers on MIRACL-de (round 1)"

# The statistics and wording constants live once, in analysis.core.plan (analysis never imports bench).
ALPHA: Final = _stats.ALPHA
BOOTSTRAP_RESAMPLES: Final = _stats.BOOTSTRAP_RESAMPLES
CLEARLY_BETTER_POINTS: Final = _stats.CLEARLY_BETTER_POINTS
CONFIDENCE: Final = _stats.CONFIDENCE
CONTAMINATION_READ_DATE: Final = _stats.CONTAMINATION_READ_DATE
DEPTHS: Final = _stats.DEPTHS
DETERMINISM_MAX_POINTS: Final = _stats.DETERMINISM_MAX_POINTS
DTYPE_CHECK_MAX_POINTS: Final = _stats.DTYPE_CHECK_MAX_POINTS
INTERVAL_METRICS: Final = _stats.INTERVAL_METRICS
JUDGED_CONTROL_MIN_AGREEMENT: Final = _stats.JUDGED_CONTROL_MIN_AGREEMENT
JUDGED_CONTROL_PAIRS: Final = _stats.JUDGED_CONTROL_PAIRS
MAIN_METRIC: Final = _stats.MAIN_METRIC
PYTREC_EVAL_TOLERANCE: Final = _stats.PYTREC_EVAL_TOLERANCE
QUALITY_DEPTH: Final = _stats.QUALITY_DEPTH
RANDOMISATION_RESAMPLES: Final = _stats.RANDOMISATION_RESAMPLES
SEED: Final = _stats.SEED
WORDING: Final = _stats.WORDING
CONTAMINATION: Final = _stats.CONTAMINATION

# --- Data -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HubSource:
    """A dataset on the Hugging Face hub at a pinned revision."""

    repo: str
    revision: str


MIRACL = HubSource("miracl/miracl", "5be20db9509754dadad47689368639fcec739c00")
CORPUS_71K = HubSource("mteb/MIRACLRetrievalHardNegatives", "332a9acb49f5e83d5397683f79d23e588f685916")
CORPUS_FULL = HubSource("miracl/miracl-corpus", "d921ec7e349ce0d28daf30b2da9da5ee698bef0d")
RERANKING = HubSource("mteb/MIRACLReranking", "ab6f54eff185a84bc1f6ab96b56bc7df87433228")
RERANKING_ID_MAP = HubSource("miracl/mmteb-miracl-reranking", "6d1962c527217f8927fca80f890f14f36b2802af")
RERANKING_ID_MAP_PATH: Final = "data/bm25/de.gz"
LANGUAGE: Final = "de"

DEV_QUERIES: Final = 305
DEV_JUDGMENTS: Final = 3_144
DEV_RELEVANT: Final = 811
CORPUS_71K_PASSAGES: Final = 71_277
CORPUS_FULL_PASSAGES: Final = 15_866_222
RERANKING_QUERIES: Final = 304
RERANKING_CANDIDATES: Final = 100
CORPUS_71K_POOL_DEPTH: Final = 250  # pooled top 250 of BM25, mE5-large and e5-mistral-instruct

PASSAGE_TEMPLATE: Final = "{title}\n{text}"  # "title + \n + text" everywhere


def passage_text(title: str, text: str) -> str:
    """The plan's passage text: ``title + "\\n" + text``."""
    return f"{title}\n{text}"


# --- First stages -----------------------------------------------------------------------------------------

TYPESENSE_VERSION: Final = "30.2"
TYPESENSE_IMAGE: Final = (
    "typesense/typesense:30.2@sha256:610f2d34b1f93d00762869da2c67736775e5798d19a2c8b91b014b8a0cc1e110"
)

StageId = Literal["keyword-71k", "vector-71k", "hybrid-71k", "keyword-full", "keyword-plain-71k"]


@dataclass(frozen=True)
class StagePlan:
    id: str
    corpus: Literal["71k", "full"]
    method: str
    reranked: bool  # keyword-plain-71k is a reference only, no rerankers


STAGES: Final = MappingProxyType(
    {
        s.id: s
        for s in (
            StagePlan("keyword-71k", "71k", "Typesense text search, German settings", True),
            StagePlan("vector-71k", "71k", "Arctic embeddings, Typesense vector search", True),
            StagePlan("hybrid-71k", "71k", "Typesense rank fusion, alpha 0.3", True),
            StagePlan("keyword-full", "full", "Typesense text search, German settings", True),
            StagePlan(
                "keyword-plain-71k",
                "71k",
                "Typesense without locale, stemming and stopwords, default search parameters",
                False,
            ),
        )
    }
)
RERANKED_STAGES: Final = tuple(s for s, p in STAGES.items() if p.reranked)

HYBRID_ALPHA: Final = 0.3
GERMAN_LOCALE: Final = "de"
GERMAN_FIELDS: Final = ("title", "text")
PLANNED_STOPWORD_COUNT: Final = 270  # the plan's figure; the measured size is recorded with every result
GERMAN_SEARCH_PARAMS: Final = MappingProxyType(
    {
        "query_by": "title,text",
        "prefix": "false",
        "drop_tokens_threshold": 100,
        "num_typos": 2,
        "typo_tokens_threshold": 1,
        "per_page": 100,
    }
)
FIRST_STAGE_DEPTH: Final = 100
EF_MIN_OVERLAP: Final = 0.99  # top-100 overlap of HNSW with exact search

EMBEDDING_MODEL = HubSource(
    "Snowflake/snowflake-arctic-embed-l-v2.0", "ac6544c8a46e00af67e330e85a9028c66b8cfd9a"
)
EMBEDDING_QUERY_PROMPT: Final = "query: "
EMBEDDING_DIMS: Final = 1024

BM25_REFERENCE_NDCG10: Final = 0.226
BM25_REFERENCE_RECALL100: Final = 0.572

# --- Rerankers --------------------------------------------------------------------------------------------

Implementation = Literal["cross-encoder", "jina-listwise", "querit", "voyage-api"]


@dataclass(frozen=True)
class RerankerPlan:
    id: str
    model: str
    revision: str | None  # None: an API model, the measurement date is recorded instead
    implementation: Implementation
    max_input: str  # the plan's wording of the maximum input
    listwise: bool = False
    code_repo: str | None = None  # remote code pinned separately (gte)
    code_revision: str | None = None
    raw_logit: bool = False
    instruction: str | None = None
    local: bool = True
    deciding_reference: str = ""

    @property
    def contamination(self) -> str:
        """MTEB registry ``training_datasets`` note, read on CONTAMINATION_READ_DATE (from
        analysis.core.plan)."""
        return CONTAMINATION[self.id].note

    @property
    def flagged(self) -> bool:
        """Marked in every table; never called a winner without the note."""
        return CONTAMINATION[self.id].flagged


QWEN3_INSTRUCTION: Final = "Given a web search query, retrieve relevant passages that answer the query"

RERANKERS: Final = MappingProxyType(
    {
        r.id: r
        for r in (
            RerankerPlan(
                "gte-base",
                "Alibaba-NLP/gte-multilingual-reranker-base",
                "8215cf04918ba6f7b6a62bb44238ce2953d8831c",
                "cross-encoder",
                "512 (model card)",
                code_repo="Alibaba-NLP/new-impl",
                code_revision="40ced75c3017eb27626c9d4ea981bde21a2662f4",
                deciding_reference="model-card code under transformers 4.57",
            ),
            RerankerPlan(
                "bge-v2-m3",
                "BAAI/bge-reranker-v2-m3",
                "953dc6f6f85a1b2dbfca4c34a2796e7dde08d41e",
                "cross-encoder",
                "512 (model card)",
                deciding_reference="model-card code in plain transformers",
            ),
            RerankerPlan(
                "jina-v3.5",
                "jinaai/jina-reranker-v3.5",
                "e8a93f33f0b22108f8c2364f8484ce3422552fbc",
                "jina-listwise",
                "fixed by vendor code (query 1024, document 8192)",
                listwise=True,
                deciding_reference="model-card code under transformers 4.57",
            ),
            RerankerPlan(
                "qwen3-0.6b",
                "Qwen/Qwen3-Reranker-0.6B",
                "e61197ed45024b0ed8a2d74b80b4d909f1255473",
                "cross-encoder",
                "vendor default",
                raw_logit=True,
                instruction=QWEN3_INSTRUCTION,
                deciding_reference="model-card code in plain transformers",
            ),
            RerankerPlan(
                "mxbai-large-v2",
                "mixedbread-ai/mxbai-rerank-large-v2",
                "ca7e1ee484c37c0ddd8d178a9a5c33cec575c5e6",
                "cross-encoder",
                "vendor default",
                raw_logit=True,
                deciding_reference="vendor package mxbai-rerank==0.1.6",
            ),
            RerankerPlan(
                "qwen3-4b",
                "Qwen/Qwen3-Reranker-4B",
                "22e683669bc0f0bd69640a1354a6d0aebcfeede5",
                "cross-encoder",
                "vendor default",
                raw_logit=True,
                instruction=QWEN3_INSTRUCTION,
                deciding_reference="model-card code in plain transformers",
            ),
            RerankerPlan(
                "querit-4b",
                "Querit/Querit-4B",
                "e557bb5ce6555f16b33dbb7d2ca62e8d27c14c13",
                "querit",
                "1024 (the model pads every input to the maximum)",
                deciding_reference="mteb 2.24.3 QueritWrapper input format under transformers 4.57",
            ),
            RerankerPlan(
                "voyage-rerank-3",
                "rerank-3",
                None,
                "voyage-api",
                "32k",
                local=False,
            ),
            RerankerPlan(
                "voyage-rerank-3-lite",
                "rerank-3-lite",
                None,
                "voyage-api",
                "32k",
                local=False,
            ),
        )
    }
)
LOCAL_RERANKERS: Final = tuple(r for r, p in RERANKERS.items() if p.local)
API_RERANKERS: Final = tuple(r for r, p in RERANKERS.items() if not p.local)
EMBEDDING_CONTAMINATION: Final = _stats.EMBEDDING_CONTAMINATION.note

TRANSFORMERS_VERSION: Final = "5.5.4"
SENTENCE_TRANSFORMERS_VERSION: Final = "6.1.0"
REFERENCE_TRANSFORMERS_VERSION: Final = "4.57"
MTEB_VERSION: Final = "2.24.3"
MXBAI_RERANK_VERSION: Final = "0.1.6"
PYTHON_VERSION: Final = "3.14.8"

VOYAGE_TRUNCATION: Final = True
VOYAGE_RETURN_DOCUMENTS: Final = False

# --- Adapter checks ---------------------------------------------------------------------------------------

EQUALITY_QUERIES: Final = 20  # first 20 MIRACLReranking queries
EQUALITY_CANDIDATES: Final = 100
EQUALITY_MIN_SPEARMAN: Final = 0.99  # per query
VOYAGE_POINTWISE_TOLERANCE: Final = 0.001  # check 3: same candidate, k = 20 and k = 100
VOYAGE_POINTWISE_DEPTHS: Final = (20, 100)

# --- Quality ----------------------------------------------------------------------------------------------

METRICS: Final = (
    "ndcg@10",
    "ndcg'@10",
    "hit@5",
    "hit@10",
    "recall@5",
    "recall@10",
    "recall@20",
    "mrr@10",
    "judged@10",
)
STAGE_METRICS: Final = ("recall@100", "ceiling")  # plus first-stage latency
DETERMINISM_MODELS: Final = ("bge-v2-m3", "qwen3-0.6b", "jina-v3.5")
DETERMINISM_STAGE: Final = "hybrid-71k"
DTYPE_CHECK_MODELS: Final = ("gte-base", "bge-v2-m3", "jina-v3.5", "qwen3-0.6b")
DTYPE_CHECK_QUERIES: Final = 20
REPRODUCTION_MAX_POINTS: Final = 0.1  # fresh clone, two rerankers, same GPU

# --- Judged sample of unjudged passages ---------------------------------------------------------------------

JUDGED_SAMPLE_STAGE: Final = "hybrid-71k"
JUDGED_SAMPLE_FULL_STAGE: Final = "keyword-full"
JUDGED_SAMPLE_TOP_MODELS: Final = 3
JUDGED_SAMPLE_PER_GROUP: Final = 15
JUDGED_SAMPLE_MAX_RANK: Final = 3
JUDGED_CONTROL_RELEVANT: Final = 8
JUDGED_CONTROL_NOT_RELEVANT: Final = 7
JUDGE_MODEL: Final = "claude-opus-5-5"

# --- Pitfalls experiment ------------------------------------------------------------------------------------

PITFALL_MODEL: Final = "qwen3-0.6b"
PITFALL_STAGE: Final = "hybrid-71k"
PITFALL_MAX_LENGTH: Final = 256
PITFALL_RUN_IDS: Final = _stats.PITFALL_RUN_IDS
PITFALL_REFERENCE: Final = _stats.PITFALL_REFERENCE
PITFALL_TYPESENSE: Final = _stats.PITFALL_TYPESENSE

# --- Latency ----------------------------------------------------------------------------------------------

WARMUP_CALLS: Final = 20
GPU_PASSES: Final = 3
GPU_DEPTHS: Final = (20, 50, 100)
GPU_NAME: Final = "RTX 5070 Ti"
CPU_PRE_THREADS: Final = 8
CPU_SERVER: Final = "Hetzner CCX33"
CPU_MODELS: Final = ("gte-base", "bge-v2-m3", "jina-v3.5", "qwen3-0.6b")
CPU_INT8_MODEL: Final = "bge-v2-m3"
CPU_SAMPLE_QUERIES: Final = 100
CPU_SAMPLE_SEED: Final = SEED  # the plan names the same seed
CPU_DEPTHS: Final = (20, 100)
CPU_PASSES: Final = 1
CPU_QWEN4B_QUERIES: Final = 5
CPU_QWEN4B_DEPTH: Final = 20
CPU_QWEN4B_WARMUP: Final = 1
INT8_MIN_SPEARMAN: Final = 0.99
INT8_SPEARMAN_QUERIES: Final = 20
API_DEPTHS: Final = (20, 100)
API_TIMES_OF_DAY: Final = 3
LATENCY_PERCENTILES: Final = (50, 95)

# --- OpenVINO int8 ----------------------------------------------------------------------------------------

INT8_CALIBRATION_PAIRS: Final = 300

# --- Costs ------------------------------------------------------------------------------------------------

# The cost constants live once, in analysis.core.plan (the costs section is computed by analysis).
SECONDS_PER_MONTH: Final = _stats.SECONDS_PER_MONTH
UTILISATIONS: Final = _stats.UTILISATIONS
CCX33_EUR_PER_MONTH: Final = _stats.CCX33_EUR_PER_MONTH
GEX45_EUR_PER_MONTH: Final = _stats.GEX45_EUR_PER_MONTH
GEX45_EUR_EXTRA_PER_MONTH: Final = _stats.GEX45_EUR_EXTRA_PER_MONTH
GEX45_EUR_SETUP: Final = _stats.GEX45_EUR_SETUP
LIVE_SEARCH_P95_MS: Final = _stats.LIVE_SEARCH_P95_MS
CHAT_RERANK_P95_MS: Final = _stats.CHAT_RERANK_P95_MS
CONTEXT_REFERENCE_K: Final = _stats.CONTEXT_REFERENCE_K
CONTEXT_REFERENCE_LLMS: Final = _stats.CONTEXT_REFERENCE_LLMS
