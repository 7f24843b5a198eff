"""bench/core/plan.py (and analysis/core/plan.py through it) against PLAN.md: every value is captured from
the plan's text by a pattern and compared with the constant, so a typo on either side fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import analysis.core.plan as stats
from bench.core import plan

PLAN_TEXT = (Path(__file__).resolve().parent.parent / "PLAN.md").read_text(encoding="utf-8")


def section(title_prefix: str) -> str:
    """The body of the ``##`` section whose heading starts with ``title_prefix``."""
    parts = re.split(r"^## ", PLAN_TEXT, flags=re.M)
    hits = [p for p in parts[1:] if p.startswith(title_prefix)]
    assert len(hits) == 1, f"expected one section {title_prefix!r}, found {len(hits)}"
    return hits[0]


def num(text: str) -> float:
    text = text.rstrip(".")  # a value at the end of a sentence
    value = float(text.replace(",", ""))
    return int(value) if value.is_integer() and "." not in text else value


def grab(text: str, pattern: str) -> tuple[str, ...]:
    m = re.search(pattern, " ".join(text.split()))  # line breaks of PLAN.md are not part of a value
    assert m is not None, f"pattern {pattern!r} not found in the plan section"
    return m.groups()


def table(text: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in ln.strip("|").split("|")), strict=True)) for ln in lines[2:]]


def test_title() -> None:
    assert PLAN_TEXT.splitlines()[0] == f"# {plan.PLAN_TITLE}"


# --- Data ---------------------------------------------------------------------------------------------------


def test_hub_revisions_are_exactly_the_plans() -> None:
    pinned = set(re.findall(r"([\w.-]+/[\w.-]+)@([0-9a-f]{40})", PLAN_TEXT))
    ours = {
        (s.repo, s.revision)
        for s in (
            plan.MIRACL,
            plan.CORPUS_71K,
            plan.CORPUS_FULL,
            plan.RERANKING,
            plan.RERANKING_ID_MAP,
            plan.EMBEDDING_MODEL,
        )
    }
    ours |= {(r.code_repo, r.code_revision) for r in plan.RERANKERS.values() if r.code_repo is not None}
    assert ours == pinned


def test_data_counts() -> None:
    data = section("Data")
    q, j, r = grab(data, r"MIRACL German dev: ([\d,]+) queries, ([\d,]+) judgments, ([\d,]+) relevant")
    assert (num(q), num(j), num(r)) == (plan.DEV_QUERIES, plan.DEV_JUDGMENTS, plan.DEV_RELEVANT)
    (p71,) = grab(data, r"subset de,\s+([\d,]+) passages")
    assert num(p71) == plan.CORPUS_71K_PASSAGES
    (pool,) = grab(data, r"pooled top (\d+) of BM25")
    assert num(pool) == plan.CORPUS_71K_POOL_DEPTH
    (full,) = grab(data, r"de, ([\d,]+) passages\. Keyword")
    assert num(full) == plan.CORPUS_FULL_PASSAGES
    rq, rc = grab(data, r"\(de, (\d+) queries x (\d+) BM25 candidates")
    assert (num(rq), num(rc)) == (plan.RERANKING_QUERIES, plan.RERANKING_CANDIDATES)
    (idmap,) = grab(data, re.escape(plan.RERANKING_ID_MAP.revision) + r"` `([^`]+)`")
    assert idmap == plan.RERANKING_ID_MAP_PATH
    assert '`title + "\\n" + text`' in data
    assert plan.passage_text("T", "x") == plan.PASSAGE_TEMPLATE.format(title="T", text="x") == "T\nx"


# --- First stages -------------------------------------------------------------------------------------------


def test_typesense_image_and_version() -> None:
    heading = section("First stages")
    (image,) = grab(heading, r"`(typesense/typesense:[\d.]+@sha256:[0-9a-f]{64})`")
    assert image == plan.TYPESENSE_IMAGE
    (version,) = grab(heading, r"^First stages \(Typesense ([\d.]+),")
    assert version == plan.TYPESENSE_VERSION
    assert plan.TYPESENSE_IMAGE.startswith(f"typesense/typesense:{version}@sha256:")


def test_stage_table() -> None:
    rows = table(section("First stages"))
    assert [r["stage"] for r in rows] == list(plan.STAGES)
    for row in rows:
        ours = plan.STAGES[row["stage"]]
        assert ours.corpus == row["corpus"]
        reference_only = "(reference only, no rerankers)" in row["method"]
        assert ours.reranked is not reference_only
        assert row["method"].replace(" (reference only, no rerankers)", "") == ours.method
    assert plan.RERANKED_STAGES == tuple(r["stage"] for r in rows if "no rerankers" not in r["method"])


def test_german_settings_and_vectors() -> None:
    text = section("First stages")
    params = dict(re.findall(r"`(\w+)=([^`]+)`", text))
    assert params == {k: str(v) for k, v in plan.GERMAN_SEARCH_PARAMS.items()}
    (alpha,) = grab(PLAN_TEXT, r"rank fusion, alpha ([\d.]+)")
    assert num(alpha) == plan.HYBRID_ALPHA
    (count,) = grab(text, r"before it removes stopwords; (\d+) entries")
    assert num(count) == plan.PLANNED_STOPWORD_COUNT
    (locale,) = grab(text, r'`locale: "(\w+)"`')
    assert locale == plan.GERMAN_LOCALE == plan.LANGUAGE
    assert tuple(grab(text, r"fields `(\w+)` and `(\w+)`")) == plan.GERMAN_FIELDS
    (per_page,) = grab(text, r"`per_page=(\d+)`")
    assert num(per_page) == plan.FIRST_STAGE_DEPTH
    (overlap,) = grab(text, r"top-(\d+) overlap with exact search is at least (\d+) %")[1:]
    assert num(overlap) / 100 == plan.EF_MIN_OVERLAP
    (prompt,) = grab(text, r"queries with prompt\s+`([^`]+)`")
    assert prompt == plan.EMBEDDING_QUERY_PROMPT == "query: "  # the trailing space is part of the prompt
    (dims,) = grab(text, r"L2-normalised, (\d+) dimensions")
    assert num(dims) == plan.EMBEDDING_DIMS
    ndcg, recall = grab(text, r"nDCG@10 ([\d.]+),\s+Recall@100 ([\d.]+)")
    assert (num(ndcg), num(recall)) == (plan.BM25_REFERENCE_NDCG10, plan.BM25_REFERENCE_RECALL100)


# --- Rerankers ----------------------------------------------------------------------------------------------


IMPLEMENTATION = {
    "sentence-transformers CrossEncoder": "cross-encoder",
    "`model.rerank` (listwise)": "jina-listwise",
    "QueritWrapper": "querit",
    "HTTP API": "voyage-api",
}


def test_model_table() -> None:
    rows = table(section("Rerankers"))
    assert [r["id"] for r in rows] == list(plan.RERANKERS)
    for row in rows:
        ours = plan.RERANKERS[row["id"]]
        if ours.local:
            assert row["model"] == ours.model
            assert row["revision"].split()[0] == ours.revision
        else:
            assert row["model"] == f"Voyage API `{ours.model}`"
            assert ours.revision is None and row["revision"] == "API, measurement date"
        if ours.code_repo is not None:
            assert f"(code {ours.code_repo}@{ours.code_revision})" in row["revision"]
        kinds = {v for k, v in IMPLEMENTATION.items() if k in row["implementation"]}
        assert kinds == {ours.implementation}
        assert ours.raw_logit == ("raw logit score" in row["implementation"])
        assert ours.listwise == ("listwise" in row["implementation"])
        assert row["max input"] == ours.max_input
    assert plan.LOCAL_RERANKERS == tuple(r["id"] for r in rows if "API" not in r["implementation"])


def test_reranker_rules_and_versions() -> None:
    text = section("Rerankers")
    (instruction,) = grab(text, r'model-card instruction "([^"]+)"')
    assert instruction == plan.QWEN3_INSTRUCTION
    assert [r for r, p in plan.RERANKERS.items() if p.instruction == instruction] == [
        "qwen3-0.6b",
        "qwen3-4b",
    ]
    trunc, docs = grab(text, r"`truncation: (\w+)` and `return_documents: (\w+)`")
    assert (trunc == "true", docs == "true") == (plan.VOYAGE_TRUNCATION, plan.VOYAGE_RETURN_DOCUMENTS)
    tf, st = grab(text, r"transformers (\d+(?:\.\d+)*) and sentence-transformers (\d+(?:\.\d+)*)")
    assert (tf, st) == (plan.TRANSFORMERS_VERSION, plan.SENTENCE_TRANSFORMERS_VERSION)
    (mteb,) = grab(PLAN_TEXT, r"mteb ([\d.]+) `QueritWrapper`")
    assert mteb == plan.MTEB_VERSION
    (mxbai,) = grab(PLAN_TEXT, r"`mxbai-rerank==([\d.]+)`")
    assert mxbai == plan.MXBAI_RERANK_VERSION
    (ref_tf,) = grab(PLAN_TEXT, r"model-card code under\s+transformers ([\d.]+)")
    assert ref_tf == plan.REFERENCE_TRANSFORMERS_VERSION
    (python,) = grab(PLAN_TEXT, r"Python\s+([\d.]+) and every package")
    assert python == plan.PYTHON_VERSION


# Plan wording of the contamination sentence -> model ids it covers.
CONTAMINATION_GROUPS = {
    "Qwen3-Reranker 0.6B and 4B": ("qwen3-0.6b", "qwen3-4b"),
    "Querit-4B": ("querit-4b",),
    "bge and jina": ("bge-v2-m3", "jina-v3.5"),
    "mxbai": ("mxbai-large-v2",),
    "gte": ("gte-base",),
}


def test_contamination_flags() -> None:
    text = section("Rerankers")
    (date,) = grab(text, r"training_datasets`, read ([\d-]+)\)")
    assert date == plan.CONTAMINATION_READ_DATE
    (sentence,) = grab(text, r"read [\d-]+\): (.*?)\. Flagged")
    notes = dict(tuple(part.split(": ", 1)) for part in sentence.split("; "))
    assert notes.pop("Arctic-l-v2.0") == plan.EMBEDDING_CONTAMINATION
    assert set(notes) == set(CONTAMINATION_GROUPS)
    for group, ids in CONTAMINATION_GROUPS.items():
        for model_id in ids:
            assert plan.RERANKERS[model_id].contamination == notes[group]
            assert stats.CONTAMINATION[model_id].flagged == (
                "MIRACL" in notes[group] and "no MIRACL" not in notes[group]
            )
    assert {m for m, c in stats.CONTAMINATION.items() if c.flagged} == {"qwen3-0.6b", "qwen3-4b", "querit-4b"}
    assert set(stats.CONTAMINATION) == set(plan.RERANKERS)


# --- Adapter checks -----------------------------------------------------------------------------------------


def test_adapter_checks() -> None:
    text = section("Adapter checks")
    q, c = grab(text, r"first (\d+) MIRACLReranking queries \((\d+) fixed candidates")
    assert (num(q), num(c)) == (plan.EQUALITY_QUERIES, plan.EQUALITY_CANDIDATES)
    (rho,) = grab(text, r"Spearman >= ([\d.]+) per query")
    assert num(rho) == plan.EQUALITY_MIN_SPEARMAN
    (tol,) = grab(text, r"`ndcg_cut_10` within ([\d.]+)")
    assert num(tol) == plan.PYTREC_EVAL_TOLERANCE == stats.PYTREC_EVAL_TOLERANCE
    vt, k1, k2 = grab(text, r"\(within ([\d.]+)\) at k = (\d+) and\s+k = (\d+)")
    assert num(vt) == plan.VOYAGE_POINTWISE_TOLERANCE
    assert (num(k1), num(k2)) == plan.VOYAGE_POINTWISE_DEPTHS


# --- Quality ------------------------------------------------------------------------------------------------


def test_quality_runs_and_metrics() -> None:
    text = section("Quality")
    stages, depth = grab(text, r"every reranker on (.*?), depth (\d+)\.")
    assert re.split(r", | and ", stages) == list(plan.RERANKED_STAGES)
    assert num(depth) == plan.QUALITY_DEPTH
    d1, d2 = grab(text, r"Pointwise depths (\d+) and (\d+)")
    assert (num(d1), num(d2), num(depth)) == plan.DEPTHS
    (metrics,) = grab(text, r"Metrics: (.*?)\. Uncertainty")
    names = [
        re.sub(r" \(.*\)", "", m).replace(" on condensed lists", "").lower() for m in metrics.split(", ")
    ]
    assert names == [m.replace("'", "'") for m in plan.METRICS]
    assert plan.MAIN_METRIC == names[0] and "(main)" in metrics


def test_statistics() -> None:
    text = section("Quality")
    conf, boot, seed, m1, m2 = grab(
        text,
        r"(\d+) % bootstrap intervals \(([\d,]+) resamples over queries, seed (\d+)\) for (\S+) and (\S+)\.",
    )
    assert num(conf) / 100 == plan.CONFIDENCE
    assert num(boot) == plan.BOOTSTRAP_RESAMPLES and num(seed) == plan.SEED
    assert (m1.lower(), m2.lower()) == plan.INTERVAL_METRICS
    flips, seed2 = grab(text, r"randomisation test \(([\d,]+) sign flips, seed (\d+)\)")
    assert num(flips) == plan.RANDOMISATION_RESAMPLES and num(seed2) == plan.SEED
    (alpha,) = grab(text, r"alpha ([\d.]+)\.")
    assert num(alpha) == plan.ALPHA
    (points,) = grab(text, r"at least ([\d.]+) nDCG points")
    assert num(points) == plan.CLEARLY_BETTER_POINTS
    words = tuple(grab(text, r'"(clearly better)" = .*?"(measurably better)" = .*?otherwise "(on par)"'))
    assert words == plan.WORDING


def test_determinism_and_dtype_check() -> None:
    text = section("Quality")
    models, stage, pts = grab(
        text, r"Determinism: (.*?) are run a second time on ([\w-]+); .*?within ([\d.]+)"
    )
    assert tuple(re.split(r", | and ", models)) == plan.DETERMINISM_MODELS
    assert stage == plan.DETERMINISM_STAGE and num(pts) == plan.DETERMINISM_MAX_POINTS
    models2, n, pts2 = grab(text, r"Data type check: (.*?) on (\d+) queries.*?less than ([\d.]+) points")
    short = {"gte": "gte-base", "bge": "bge-v2-m3", "jina": "jina-v3.5"}
    assert tuple(short.get(m, m) for m in re.split(r", | and ", models2)) == plan.DTYPE_CHECK_MODELS
    assert num(n) == plan.DTYPE_CHECK_QUERIES and num(pts2) == plan.DTYPE_CHECK_MAX_POINTS
    (repro,) = grab(PLAN_TEXT, r"same GPU within ([\d.]+) points")
    assert num(repro) == plan.REPRODUCTION_MAX_POINTS


# --- Judged sample, pitfalls --------------------------------------------------------------------------------


def test_judged_sample() -> None:
    text = section("Judged sample")
    stage, top, per, rank = grab(
        text,
        r"unjudged passages ([\w-]+): the (three) best rated models by nDCG@10, "
        r"(\d+) random unjudged passages each from ranks 1 to (\d+)",
    )
    assert stage.lower() == plan.JUDGED_SAMPLE_STAGE and top == "three" and plan.JUDGED_SAMPLE_TOP_MODELS == 3
    assert num(per) == plan.JUDGED_SAMPLE_PER_GROUP and num(rank) == plan.JUDGED_SAMPLE_MAX_RANK
    full, per_full = grab(text, r"; ([\w-]+): (\d+) unjudged passages")
    assert full == plan.JUDGED_SAMPLE_FULL_STAGE and num(per_full) == plan.JUDGED_SAMPLE_PER_GROUP
    pairs, rel, nrel = grab(text, r"(\d+) judged control pairs \((\d+) relevant, (\d+) not relevant\)")
    assert (num(pairs), num(rel), num(nrel)) == (
        plan.JUDGED_CONTROL_PAIRS,
        plan.JUDGED_CONTROL_RELEVANT,
        plan.JUDGED_CONTROL_NOT_RELEVANT,
    )
    agree, of = grab(text, r"fewer than (\d+) of the (\d+) control pairs")
    assert num(agree) == plan.JUDGED_CONTROL_MIN_AGREEMENT and num(of) == plan.JUDGED_CONTROL_PAIRS
    (judge,) = grab(text, r"\(`([\w.-]+)`\)")
    assert judge == plan.JUDGE_MODEL


def test_pitfalls() -> None:
    text = section("Pitfalls experiment")
    (stage,) = grab(text, r"Qwen3-Reranker-0.6B on ([\w-]+) with")
    assert stage == plan.PITFALL_STAGE and plan.RERANKERS[plan.PITFALL_MODEL].model.endswith(
        "Qwen3-Reranker-0.6B"
    )
    (length,) = grab(text, r"maximum length (\d+)")
    assert num(length) == plan.PITFALL_MAX_LENGTH


# --- Latency, int8, costs -----------------------------------------------------------------------------------


def test_latency() -> None:
    text = section("Latency")
    (warm,) = grab(text, r"before each k, (\d+) warm-up calls")
    assert num(warm) == plan.WARMUP_CALLS
    assert tuple(int(p) for p in grab(text, r"p(\d+) and p(\d+)")) == plan.LATENCY_PERCENTILES
    gpu, queries, passes, ks = grab(
        text, r"GPU \(([^,]+), desktop idle.*?(\d+) queries, (\d+) passes, k = ([\d, ]+)\."
    )
    assert gpu == plan.GPU_NAME and num(queries) == plan.DEV_QUERIES and num(passes) == plan.GPU_PASSES
    assert tuple(int(k) for k in ks.split(", ")) == plan.GPU_DEPTHS
    (threads,) = grab(text, r"`taskset` to (\d+) threads")
    assert num(threads) == plan.CPU_PRE_THREADS
    server, n, seed, k1, k2, cpu_passes = grab(
        text,
        r"CPU, published \((Hetzner \w+),.*?sample of (\d+) queries \(seed (\d+)\), "
        r"k = (\d+) and (\d+), (\d+) pass;",
    )
    assert (
        server == plan.CPU_SERVER and num(n) == plan.CPU_SAMPLE_QUERIES and num(seed) == plan.CPU_SAMPLE_SEED
    )
    assert (num(k1), num(k2)) == plan.CPU_DEPTHS and num(cpu_passes) == plan.CPU_PASSES
    models, int8 = grab(text, r"HEL1\): (.*?) with PyTorch fp32 and ([\w.-]+) with OpenVINO int8")
    assert tuple(re.split(r", | and ", models)) == plan.CPU_MODELS and int8 == plan.CPU_INT8_MODEL
    q4, k4, w4 = grab(text, r"qwen3-4b: (\d+) queries, k = (\d+), (\d+) warm-up call")
    assert (num(q4), num(k4), num(w4)) == (
        plan.CPU_QWEN4B_QUERIES,
        plan.CPU_QWEN4B_DEPTH,
        plan.CPU_QWEN4B_WARMUP,
    )
    rho, nq = grab(text, r"Spearman >= ([\d.]+) on (\d+) queries")
    assert (num(rho), num(nq)) == (plan.INT8_MIN_SPEARMAN, plan.INT8_SPEARMAN_QUERIES)
    a1, a2, times = grab(text, r"API \(Voyage\).*?k = (\d+) and (\d+), at (three) times of day")
    assert (num(a1), num(a2)) == plan.API_DEPTHS and times == "three" and plan.API_TIMES_OF_DAY == 3


def test_int8_and_costs() -> None:
    (pairs,) = grab(section("OpenVINO int8 variant"), r"calibrated on (\d+) \(query, passage\) pairs")
    assert num(pairs) == plan.INT8_CALIBRATION_PAIRS
    model, queries, stage, k = grab(
        section("OpenVINO int8 variant"),
        r"variant (bge-reranker-v2-m3), static int8.*?desktop "
        r"\((\d+) queries, ([\w-]+), k = (\d+)\) against the fp32",
    )
    assert plan.RERANKERS[stats.INT8_FP32_MODEL].model.endswith(model)
    assert (num(queries), stage, num(k)) == (
        stats.INT8_QUALITY_QUERIES,
        stats.INT8_QUALITY_STAGE,
        stats.INT8_QUALITY_DEPTH,
    )
    text = section("Costs")
    (ccx,) = grab(text, r"CCX33 ([\d.]+) EUR/month")
    assert num(ccx) == plan.CCX33_EUR_PER_MONTH
    gex, extra, setup = grab(text, r"24 GB\) ([\d.]+) EUR/month plus ([\d.]+) EUR plus (\d+) EUR setup")
    assert (num(gex), num(extra), num(setup)) == (
        plan.GEX45_EUR_PER_MONTH,
        plan.GEX45_EUR_EXTRA_PER_MONTH,
        plan.GEX45_EUR_SETUP,
    )
    (month,) = grab(text, r"Capacity = ([\d,]+) s per month")
    assert num(month) == plan.SECONDS_PER_MONTH
    (util,) = grab(text, r"at full load and at (\d+) % utilisation")
    assert (1.0, num(util) / 100) == plan.UTILISATIONS
    live, chat = grab(text, r"live search p95 <= ([\d,]+) ms.*?chat p95 <= ([\d,]+) ms")
    assert (num(live), num(chat)) == (plan.LIVE_SEARCH_P95_MS, plan.CHAT_RERANK_P95_MS)
    (k,) = grab(text, r"reranked value at k = (\d+)")
    assert num(k) == plan.CONTEXT_REFERENCE_K
    (llms,) = grab(text, r"input price of (two) reference LLMs")
    assert llms == "two" and plan.CONTEXT_REFERENCE_LLMS == 2


@pytest.mark.parametrize(
    "name",
    [
        "SEED",
        "BOOTSTRAP_RESAMPLES",
        "CONFIDENCE",
        "RANDOMISATION_RESAMPLES",
        "ALPHA",
        "CLEARLY_BETTER_POINTS",
        "DETERMINISM_MAX_POINTS",
        "DTYPE_CHECK_MAX_POINTS",
        "PYTREC_EVAL_TOLERANCE",
        "JUDGED_CONTROL_MIN_AGREEMENT",
    ],
)
def test_statistics_constants_live_once_in_analysis(name: str) -> None:
    """bench.core.plan re-exports analysis.core.plan's objects instead of holding a second copy."""
    assert getattr(plan, name) is getattr(stats, name)
    source = (Path(plan.__file__)).read_text(encoding="utf-8")
    assert re.search(rf"^{name}: Final = _stats\.{name}$", source, flags=re.M)


# --- Embedder contamination and run ids (analysis.core.plan) -----------------------------


def test_embedder_flag_and_its_stages() -> None:
    text = section("Rerankers")
    (sentence,) = grab(text, r"read [\d-]+\): (.*?)\. Flagged")
    notes = dict(tuple(part.split(": ", 1)) for part in sentence.split("; "))
    assert notes[stats.EMBEDDER] == stats.EMBEDDING_CONTAMINATION.note
    assert stats.EMBEDDING_CONTAMINATION.flagged is True
    # the stages whose candidates come from Arctic embeddings: vector search, and rank fusion with it
    table = section("First stages")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| ([a-z0-9-]+) \| \w+ \| (.*?) \|$", table, re.M)}
    assert "Arctic" in rows["vector-71k"] and "rank fusion" in rows["hybrid-71k"]
    embedded = tuple(s for s, method in rows.items() if "Arctic" in method or "rank fusion" in method)
    assert embedded == stats.EMBEDDING_STAGES == ("vector-71k", "hybrid-71k")


def test_run_ids_cover_the_plan_rerankers() -> None:
    assert {m for m, r in stats.RUN_IDS.items() if r.base == m} == set(plan.RERANKERS)
    assert all(r.base is None or r.base in plan.RERANKERS for r in stats.RUN_IDS.values())


COST_CONSTANTS = (
    "SECONDS_PER_MONTH",
    "UTILISATIONS",
    "CCX33_EUR_PER_MONTH",
    "GEX45_EUR_PER_MONTH",
    "GEX45_EUR_EXTRA_PER_MONTH",
    "GEX45_EUR_SETUP",
    "LIVE_SEARCH_P95_MS",
    "CHAT_RERANK_P95_MS",
    "CONTEXT_REFERENCE_K",
    "CONTEXT_REFERENCE_LLMS",
)


@pytest.mark.parametrize("name", COST_CONSTANTS)
def test_cost_constants_live_once_in_analysis(name: str) -> None:
    """The costs section is computed by analysis (which never imports bench), so its plan values live in
    analysis.core.plan and bench.core.plan re-exports them; test_int8_and_costs checks them against
    PLAN.md."""
    assert getattr(plan, name) is getattr(stats, name)
    source = (Path(plan.__file__)).read_text(encoding="utf-8")
    assert re.search(rf"^{name}: Final = _stats\.{name}$", source, flags=re.M)


def test_latency_budgets_in_analysis() -> None:
    live, chat = grab(section("Costs"), r"live search p95 <= ([\d,]+) ms in total.*?chat p95 <= ([\d,]+) ms")
    assert num(live) == stats.LATENCY_BUDGET_LIVE_P95_MS == plan.LIVE_SEARCH_P95_MS
    assert num(chat) == stats.LATENCY_BUDGET_CHAT_P95_MS == plan.CHAT_RERANK_P95_MS


# --- Pitfalls experiment: the declared variants and the Typesense pair (judged/pitfalls work) ---------------


def test_pitfall_variants_and_typesense_pair() -> None:
    text = section("Pitfalls experiment")
    letters = re.findall(r"\(([a-d])\) ", text)
    assert letters == ["a", "b", "c", "d"]  # (d) is run as d1 and d2 (D-032)
    assert len(plan.PITFALL_RUN_IDS) == 5 and plan.PITFALL_REFERENCE == plan.PITFALL_RUN_IDS[0]
    assert all(r.startswith(f"{plan.PITFALL_MODEL}.pitfall-") for r in plan.PITFALL_RUN_IDS)
    ids = [r.split(".pitfall-")[1].split("-")[0] for r in plan.PITFALL_RUN_IDS]
    assert ids == ["a", "b", "c", "d1", "d2"]
    flat = " ".join(text.split())
    assert "(b) empty instruction" in flat and "(c) right padding" in flat and "yes/no suffix lost" in flat
    (plain, german) = grab(flat, r"Typesense: ([\w-]+) against ([\w-]+)\.")
    assert (plain, german) == plan.PITFALL_TYPESENSE


def test_every_shared_value_has_one_home_in_analysis() -> None:
    """analysis/core/plan.py is the one home of every plan value both packages read (analysis never imports
    bench): bench/core/plan.py only binds those objects by name, so a literal written there instead (which
    could drift from analysis's) fails here."""
    shared = {n for n in vars(stats) if n.isupper() and n in vars(plan)} - {"EMBEDDING_CONTAMINATION"}
    source = Path(plan.__file__).read_text(encoding="utf-8")
    assert len(shared) >= 30
    # bench keeps the note of analysis's record under the same name
    assert plan.EMBEDDING_CONTAMINATION == stats.EMBEDDING_CONTAMINATION.note
    assert "EMBEDDING_CONTAMINATION: Final = _stats.EMBEDDING_CONTAMINATION.note" in source
    for name in sorted(shared):
        assert getattr(plan, name) is getattr(stats, name), name
        assert re.search(rf"^{name}: Final = _stats\.{name}$", source, flags=re.M), name
