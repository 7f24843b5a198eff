"""``bench determinism`` / ``bench dtype-check`` exit 1 on a failed rule and on nothing checked, 0 only when
every required model was checked and passed; one boundary convention for both rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analysis.core.plan import DETERMINISM_BOUNDARY_PASSES, DTYPE_CHECK_BOUNDARY_PASSES
from analysis.inputs.trec import write_run
from analysis.reporting.checks import determinism, dtype_rule
from bench.core.plan import DEPTHS, DETERMINISM_MODELS, DETERMINISM_STAGE, DTYPE_CHECK_MODELS, QUALITY_DEPTH

DOCS = [f"{i}#0" for i in range(1, 12)]
GOOD = [(d, float(-i)) for i, d in enumerate(DOCS)]
BAD = [(d, float(-i)) for i, d in enumerate(reversed(DOCS))]


def test_boundary_convention_is_the_plan_constants() -> None:
    assert DETERMINISM_BOUNDARY_PASSES is True and DTYPE_CHECK_BOUNDARY_PASSES is False
    assert determinism(0.5, 0.501).passed is True  # 0.1000000000000009 points: on the boundary, passes
    # 0.4999999999999998 points by float arithmetic: exactly 0.5 on the boundary, "less than 0.5" fails
    assert dtype_rule(0.031, 0.036).passed is False
    assert dtype_rule(0.031, 0.036).difference_points == 0.5


def _write(root: Path, models: tuple[str, ...], depths: tuple[int, ...], run: list[Any]) -> None:
    for m in models:
        for k in depths:
            p = root / DETERMINISM_STAGE / f"{m}@{k}.trec"
            p.parent.mkdir(parents=True, exist_ok=True)
            write_run(p, {"q1": run, "q2": run}, tag=f"{DETERMINISM_STAGE}/{m}@{k}")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\t0\t1#0\t1\nq2\t0\t1#0\t1\n", encoding="utf-8")
    state: dict[str, Any] = {"skipped": {}}

    def fake_session(setup: Any, **kw: Any) -> tuple[None, None, dict[str, str]]:
        return None, None, dict(state["skipped"])

    monkeypatch.setattr("bench.quality.commands.run_session", fake_session)
    monkeypatch.setattr("bench.quality.inputs.study_queries", lambda: ({"q1": "a", "q2": "b"}, qrels))
    monkeypatch.setattr("bench.quality.cli.repo_root", lambda: tmp_path)
    first = tmp_path / "runs" / "first-stage" / f"{DETERMINISM_STAGE}.trec"  # what both runs reorder
    first.parent.mkdir(parents=True)
    write_run(first, {"q1": GOOD, "q2": GOOD}, tag=DETERMINISM_STAGE)
    state["root"] = tmp_path
    return state


def _determinism(env: dict[str, Any]) -> Any:
    from bench.quality.cli import determinism as cmd

    return CliRunner().invoke(cmd, ["--runs", str(env["root"] / "second")])


def test_determinism_exit_codes(env: dict[str, Any]) -> None:
    root = env["root"]
    res = _determinism(env)  # no run at all: nothing checked
    assert res.exit_code == 1 and "nothing to check" in res.output
    _write(root / "runs", DETERMINISM_MODELS, DEPTHS, GOOD)
    _write(root / "second", DETERMINISM_MODELS, DEPTHS, GOOD)
    res = _determinism(env)
    assert res.exit_code == 0, res.output
    assert json.loads(res.output.strip().splitlines()[-1])["all_passed"] is True
    _write(root / "second", DETERMINISM_MODELS[:1], (20,), BAD)  # one failed rule
    res = _determinism(env)
    assert res.exit_code == 1 and f"rule failed for {DETERMINISM_MODELS[0]}@20" in res.output
    _write(root / "second", DETERMINISM_MODELS[:1], (20,), GOOD)
    (root / "second" / DETERMINISM_STAGE / f"{DETERMINISM_MODELS[2]}@100.trec").unlink()  # one not checked
    env["skipped"] = {}
    res = _determinism(env)
    assert res.exit_code == 1 and f"not checked: {DETERMINISM_MODELS[2]}@100" in res.output
    saved = json.loads((root / "results" / "determinism" / "verdicts.json").read_text(encoding="utf-8"))
    assert saved["decision"]["all_passed"] is False


def test_dtype_check_all_models_not_rated_is_not_a_pass(env: dict[str, Any]) -> None:
    from bench.quality.cli import dtype_check

    env["skipped"] = {m: "reference failed" for m in DTYPE_CHECK_MODELS}
    out = env["root"] / "dtype"
    res = CliRunner().invoke(dtype_check, ["--runs", str(out), "--study", str(env["root"] / "s")])
    assert res.exit_code == 1 and "nothing to check" in res.output
    assert "not checked: gte-base@100 (reference failed)" in res.output
    for name in ("cpu-fp32", "gpu"):
        _write(out / name / "runs", DTYPE_CHECK_MODELS, (QUALITY_DEPTH,), GOOD)
    env["skipped"] = {}
    res = CliRunner().invoke(dtype_check, ["--runs", str(out), "--study", str(env["root"] / "s")])
    assert res.exit_code == 0, res.output
