"""analysis.reporting.judged: Wilson intervals and Cohen's kappa against statsmodels, rates per group with
unclear and parse failures excluded, control agreement with the plan's warning, the caveat, a human judgment's
agreement, and the CLI (``analysis judged``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.cli import cli
from analysis.reporting.judged import (
    CAVEAT,
    WARNING,
    JudgedInputError,
    cohens_kappa,
    human_agreement,
    read_human,
    report_section,
    summarise,
    wilson,
)


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
@settings(max_examples=200, deadline=None)
def test_wilson_matches_statsmodels(case: tuple[int, int]) -> None:
    from statsmodels.stats.proportion import proportion_confint  # heavy: not at collection

    x, n = case
    lo, hi = proportion_confint(x, n, alpha=0.05, method="wilson")
    ours = wilson(x, n)
    assert ours is not None
    assert abs(ours[0] - lo) < 1e-12 and abs(ours[1] - hi) < 1e-12


def test_wilson_known_value_and_empty() -> None:
    # 3 of 15: Wilson 95 % = [0.0705, 0.4519] (Newcombe 1998 table style), checked against statsmodels above
    lo, hi = wilson(3, 15) or [0, 0]
    assert round(lo, 4) == 0.0705 and round(hi, 4) == 0.4519
    assert wilson(0, 0) is None


def _table(a: list[Any], b: list[Any]) -> np.ndarray:
    cats = sorted({*a, *b}, key=str)
    t = np.zeros((len(cats), len(cats)))
    for x, y in zip(a, b, strict=True):
        t[cats.index(x), cats.index(y)] += 1
    return t


@given(
    st.lists(
        st.tuples(st.sampled_from([0, 1, "unclear"]), st.sampled_from([0, 1, "unclear"])),
        min_size=1,
        max_size=40,
    )
)
@settings(max_examples=200, deadline=None)
def test_kappa_matches_statsmodels(pairs: list[tuple[Any, Any]]) -> None:
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa  # heavy: not at collection

    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    ours = cohens_kappa(a, b)
    table = _table(a, b)
    if ours is None:
        assert len(set(a) | set(b)) == 1  # chance agreement 1: undefined
        return
    assert abs(ours - sm_kappa(table, return_results=False)) < 1e-12


def labels_file(tmp_path: Path, control_labels: list[Any], group_labels: list[Any]) -> Path:
    pairs = []
    n = 0
    truth = [1] * 8 + [0] * 7
    for miracl, label in zip(truth, control_labels, strict=True):
        n += 1
        group = "control-relevant" if miracl else "control-not-relevant"
        pairs.append(
            {
                "pair": n,
                "qid": f"c{n}",
                "docid": f"{n}#0",
                "groups": [group],
                "miracl_label": miracl,
                "label": label,
                "parse_failure": label is None,
            }
        )
    for label in group_labels:
        n += 1
        groups = ["hybrid-71k/a@100", "keyword-full/a@100"] if n % 2 else ["hybrid-71k/a@100"]
        pairs.append(
            {
                "pair": n,
                "qid": f"q{n}",
                "docid": f"{n}#1",
                "groups": groups,
                "miracl_label": None,
                "label": label,
                "parse_failure": label is None,
            }
        )
    data = {
        "format": "judged-labels/1",
        "judge_model": "claude-opus-5-5",
        "prompt_sha256": "ab" * 32,
        "groups": {
            "hybrid-71k/a@100": {
                "kind": "unjudged",
                "candidates": 40,
                "wanted": 15,
                "drawn": 15,
                "short": False,
            },
            "keyword-full/a@100": {
                "kind": "unjudged",
                "candidates": 9,
                "wanted": 15,
                "drawn": 9,
                "short": True,
            },
            "control-relevant": {
                "kind": "control",
                "candidates": 20,
                "wanted": 8,
                "drawn": 8,
                "short": False,
            },
            "control-not-relevant": {
                "kind": "control",
                "candidates": 20,
                "wanted": 7,
                "drawn": 7,
                "short": False,
            },
        },
        "pairs": pairs,
    }
    path = tmp_path / "judged" / "labels.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_rates_exclude_unclear_and_parse_failures(tmp_path: Path) -> None:
    group = [1, 1, 0, 0, 0, "unclear", None, 1, 0, 0, 0, 0, 0, 0, 1]
    path = labels_file(tmp_path, [1] * 8 + [0] * 7, group)
    s = summarise(json.loads(path.read_text()))
    g = s["groups"]["hybrid-71k/a@100"]
    assert (
        g["pairs"],
        g["judged_relevant"],
        g["judged_not_relevant"],
        g["unclear"],
        g["parse_failures"],
    ) == (15, 4, 9, 1, 1)
    assert g["false_negative_rate"] == 4 / 13 and g["wilson_95"] == wilson(4, 13)
    k = s["groups"]["keyword-full/a@100"]  # the odd pair numbers 17, 19, ..., 29 of pairs 16..30
    assert k["short"] and k["pairs"] == 7
    assert s["controls"]["agree"] == 15 and s["controls"]["cohens_kappa"] == 1.0 and s["warning"] is None
    assert s["caveat"] == CAVEAT and "not this bias" in CAVEAT
    assert "control-relevant" not in s["groups"]


def test_fewer_than_12_agreeing_carries_the_warning(tmp_path: Path) -> None:
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa  # heavy: not at collection

    controls = [1, 1, 1, 1, 1, 0, "unclear", None, 0, 0, 0, 0, 1, 1, 0]  # 5 + 5 agree, 2 not labelled
    s = summarise(json.loads(labels_file(tmp_path, controls, [1, 0]).read_text()))
    c = s["controls"]
    assert c["agree"] == 10 and c["labelled"] == 13 and c["unclear"] == 1 and c["parse_failures"] == 1
    miracl = [1] * 5 + [1] + [0] * 4 + [0] * 3
    llm = [1] * 5 + [0] + [0] * 4 + [1, 1, 0]
    assert c["cohens_kappa"] == pytest.approx(sm_kappa(_table(miracl, llm), return_results=False), abs=1e-12)
    assert s["warning"] == WARNING and "fewer than 12 of the 15" in WARNING
    md = "\n".join(report_section(tmp_path))
    assert WARNING in md and CAVEAT in md and "10 of 15 agree" in md
    assert json.loads((tmp_path / "judged.json").read_text())["warning"] == WARNING


def test_11_and_12_agreeing_are_the_threshold(tmp_path: Path) -> None:
    eleven = [1] * 8 + [0] * 3 + [1] * 4
    twelve = [1] * 8 + [0] * 4 + [1] * 3
    assert summarise(json.loads(labels_file(tmp_path, eleven, []).read_text()))["warning"] == WARNING
    assert summarise(json.loads(labels_file(tmp_path, twelve, []).read_text()))["warning"] is None


def test_human_agreement_and_cli(tmp_path: Path) -> None:
    path = labels_file(tmp_path, [1] * 8 + [0] * 7, [1, 0, "unclear"])
    labels = json.loads(path.read_text())
    human = tmp_path / "human.tsv"
    rows = ["# later human judgment", "c1\t1#0\t1", "c9\t9#0\t1", "q16\t16#1\t1", "q17\t17#1\tunclear", ""]
    human.write_bytes(("\ufeff" + "\r\n".join(rows)).encode("utf-8"))
    got = human_agreement(labels, read_human(human), str(human))
    assert got["both_labelled"] == 3 and got["agree"] == 2 and got["missing"] == len(labels["pairs"]) - 4
    assert got["cohens_kappa"] == cohens_kappa([1, 0, 1], [1, 1, 1])
    res = CliRunner().invoke(cli, ["judged", "--labels", str(path), "--human", str(human)])
    assert res.exit_code == 0, res.output
    assert (
        "15 of 15 agree" in res.output
        and CAVEAT in res.output
        and "LLM judgment stays the published" in res.output
    )
    bad = tmp_path / "bad.tsv"
    bad.write_text("c1\t1#0\tyes\n", encoding="utf-8")
    res = CliRunner().invoke(cli, ["judged", "--labels", str(path), "--human", str(bad)])
    assert res.exit_code == 1 and "bad.tsv, line 1" in res.output
    stranger = tmp_path / "stranger.tsv"
    stranger.write_text("zz\t1#0\t1\n", encoding="utf-8")
    with pytest.raises(JudgedInputError, match="not in the judged sample"):
        human_agreement(labels, read_human(stranger), str(stranger))
    res = CliRunner().invoke(cli, ["judged", "--labels", str(human)])
    assert res.exit_code == 1 and "not a readable labels file" in res.output


def test_no_labelled_pair_gives_a_null_rate_with_reason(tmp_path: Path) -> None:
    s = summarise(json.loads(labels_file(tmp_path, [1] * 8 + [0] * 7, ["unclear", None]).read_text()))
    g = s["groups"]["hybrid-71k/a@100"]
    assert g["false_negative_rate"] is None and g["wilson_95"] is None and "no pair" in g["reason"]


def test_analysis_report_shows_the_section_and_keeps_the_published_labels(tmp_path: Path) -> None:
    from analysis.inputs.trec import write_run
    from analysis.reporting.report import write_report

    out = tmp_path / "results"
    labels = labels_file(out, [1] * 8 + [0] * 4 + [1] * 3, [1, 0, 0])  # 12 of 15 agree: no warning
    before = labels.read_bytes()
    runs = tmp_path / "runs"
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("c1\t0\t1#0\t1\nq2\t0\tx\t0\n", encoding="utf-8")
    write_run(runs / "first-stage" / "vector-71k.trec", {"c1": [("1#0", 1.0)], "q2": [("x", 1.0)]}, tag="t")
    report = write_report(runs, qrels, out, figures=False)
    md = report.read_text(encoding="utf-8")
    assert "## Judged sample of unjudged passages" in md and "12 of 15 agree" in md and WARNING not in md
    assert CAVEAT in md
    assert labels.read_bytes() == before  # the published labels are input, never rewritten or removed
    assert json.loads((out / "judged.json").read_text())["controls"]["agree"] == 12
