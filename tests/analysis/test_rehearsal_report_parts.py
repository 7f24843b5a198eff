"""Report parts added for the rehearsal: the stage figure's paired-difference panel, the stand-in
mark, the per-stage count of queries without candidates, and the rehearsal's int8 section."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.core.plan import SEED, STANDIN_MARK, is_standin
from analysis.inputs.trec import read_run, write_run
from analysis.int8.rehearsal import cpu_flags_text, int8_rehearsal_section, read_int8_record
from analysis.reporting.report import write_report
from analysis.reporting.study import StageResult, analyse_study
from analysis.simulation.synthetic import write_study

Qrels = dict[str, dict[str, int]]
MODELS = {"minilm-standin": 1.05, "bm25-standin": 3.0}  # bm25-standin far better than the first stage


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory, miracl_qrels: Qrels) -> Path:
    runs = tmp_path_factory.mktemp("study") / "runs"
    write_study(runs, miracl_qrels, stages=["vector-71k"], models=MODELS, depths=(20, 100))
    # two queries without candidates: absent from the first stage and from every run of the stage
    gone = sorted(miracl_qrels)[:2]
    for path in [runs / "first-stage" / "vector-71k.trec", *(runs / "vector-71k").glob("*.trec")]:
        run = read_run(path, allow_unknown_queries=True)
        tag = path.read_text().split("\n", 1)[0].split()[5]
        write_run(path, {q: v for q, v in run.items() if q not in gone}, tag=tag)
    return runs


def test_paired_panel_equals_scipy_paired_bootstrap_and_holm(study: Path, miracl_qrels_path: Path) -> None:
    import scipy.stats  # heavy: not at collection

    from analysis.figures.stage import VERDICT_MARKERS
    from analysis.reporting.study import paired_differences_vs_first

    handed: list[list[StageResult]] = []
    stages, _ = analyse_study(study, miracl_qrels_path, best_chosen=handed.append)
    # plan check 2 starts with copies of the stages that hold the best models the statistics choose later
    assert [s.best for s in handed[0]] == [s.best for s in stages] and stages[0].best
    assert all(a is not b and a.runs is b.runs for a, b in zip(handed[0], stages, strict=True))
    stage = stages[0]
    rows = paired_differences_vs_first(stage)
    assert len(rows) == len(stage.runs) == 4
    verdicts = {
        (c["model"], c["depth"]): c["wording"]
        for f in stage.families
        if f["id"].endswith("vs-first-stage")
        for c in f["comparisons"]
    }
    base = stage.first_stage.per_query["ndcg@10"]
    for row in rows:
        run = row["run"]
        d = run.per_query["ndcg@10"] - base  # type: ignore[attr-defined]
        ref = scipy.stats.bootstrap(
            (d,),
            np.mean,
            n_resamples=10_000,
            method="percentile",
            confidence_level=0.95,
            rng=np.random.default_rng(SEED),
            vectorized=True,
        )
        assert row["mean"] == pytest.approx(100 * d.mean(), abs=1e-9)
        assert row["low"] == pytest.approx(100 * ref.confidence_interval.low, abs=1e-9)
        assert row["high"] == pytest.approx(100 * ref.confidence_interval.high, abs=1e-9)
        assert row["verdict"] == verdicts[(run.model, run.depth)]  # type: ignore[attr-defined]
    # the data give different verdicts, and each has its own marker
    got = {str(r["verdict"]) for r in rows}
    assert "clearly better" in got and len(got) >= 2
    assert all(v in VERDICT_MARKERS for v in got)


def test_report_marks_stand_ins_and_counts_queries_without_candidates(
    study: Path, miracl_qrels_path: Path, miracl_qrels: Qrels, tmp_path: Path
) -> None:
    assert is_standin("bm25-standin") and is_standin("minilm-standin") and not is_standin("bge-v2-m3")
    write_report(study, miracl_qrels_path, tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert f"| bm25-standin{STANDIN_MARK}@100 |" in md and f"| minilm-standin{STANDIN_MARK}@20 |" in md
    assert f"{STANDIN_MARK} declared rehearsal stand-in, not a plan model: bm25-standin (" in md
    gone = ", ".join(sorted(miracl_qrels)[:2])
    assert f"Queries without candidates: 2 of {len(miracl_qrels)} ({gone}; each scores 0" in md
    png = (tmp_path / "figures" / "vector-71k.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def _int8_record() -> dict[str, object]:
    per_query = {"q1": {"spearman": 0.995, "top10_overlap": 10}, "q2": {"spearman": 0.97, "top10_overlap": 8}}
    return {
        "what": "REHEARSAL: stand-in",
        "first_stage_run": "vector-71k.trec",
        "warmup_calls": 5,
        "fp32_source": "latency step",
        "queries": ["q1", "q2"],
        "per_query": per_query,
        "spearman_min": 0.97,
        "spearman_mean": 0.9825,
        "below_0.99": ["q2"],
        "top10_overlap_mean": 9.0,
        "ndcg@10": {"fp32": {"mean": 0.4}, "int8": {"mean": 0.41}},
        "latency": {
            "fp32": {
                "20": {"n": 2, "p50_ms": 800.0, "p95_ms": 900.0},
                "100": {"n": 2, "p50_ms": 5000.0, "p95_ms": 5500.0},
            },
            "int8": {
                "20": {"n": 2, "p50_ms": 400.0, "p95_ms": 450.0},
                "100": {"n": 2, "p50_ms": 2500.0, "p95_ms": 2600.0},
            },
        },
        "speedup_p50": {"20": 2.0, "100": 2.0},
        "loadavg": {"before": [1.0, 1.0, 1.0], "after": [2.0, 2.0, 2.0]},
        "latency_blocks": ["latency/not-published/cpu/rehearsal/minilm-standin-int8/k20-pass1.json"],
        "int8_manifest": {
            "cpu": {
                "cpu_model": "AMD EPYC",
                "flags": {"avx512_vnni": False, "avx2": True},
                "vnni": False,
                "source": "/proc/cpuinfo",
            }
        },
    }


def test_int8_section(tmp_path: Path) -> None:
    lines = int8_rehearsal_section(_int8_record())
    text = "\n".join(lines)
    assert lines[0] == "## OpenVINO int8 method on the stand-in (rehearsal)"
    assert "| 0.9700 | 0.9825 | 1 of 2 | 9.0 of 10 | 40.0 | 41.0 |" in text
    assert "| 20 | 2 | 800.0 | 900.0 | 400.0 | 450.0 | 2.00x |" in text
    assert "| 100 | 2 | 5,000.0 | 5,500.0 | 2,500.0 | 2,600.0 | 2.00x |" in text
    assert "int8 flags present: avx2; absent: avx512_vnni" in text
    assert "VNNI/AMX int8 instructions: no" in text
    assert "NOT met on 1 of 2 queries" in text
    assert cpu_flags_text({}).startswith("CPU int8 flags not recorded")
    path = tmp_path / "int8.json"
    path.write_text("\ufeff" + json.dumps(_int8_record()), encoding="utf-8")  # a BOM is read
    assert read_int8_record(path)["spearman_min"] == 0.97
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match=r"int8\.json: cannot read the rehearsal's int8 record"):
        read_int8_record(path)
