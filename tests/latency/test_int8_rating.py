"""The published CPU int8 latency: ``bge-v2-m3-int8`` has no adapter check of its own
(``bench check-adapters`` knows plan models only); it is rated by bge-v2-m3's check plus the plan's int8
agreement verdict (``bench int8 agreement --against``), and refused naming what is missing otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core.errors import BenchError
from bench.equality.results import scoring_setting, write_result
from bench.int8.agreement import VERDICT_FORMAT, int8_outcome
from bench.latency.commands import unrated_models
from bench.latency.presets import INT8_ID


def _verdict(path: Path, *, passed: bool, manifest: str = "abc") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "format": VERDICT_FORMAT,
        "passed": passed,
        "failed": [] if passed else ["q7"],
        "int8_manifest_sha256": manifest,
    }
    path.write_text(json.dumps(body))
    return path


def test_int8_rated_by_the_base_check_plus_the_agreement(tmp_path: Path) -> None:
    checks = tmp_path / "results" / "adapter-checks"
    verdict = tmp_path / "results" / "int8" / "agreement.json"
    write_result("bge-v2-m3", {"model": "bge-v2-m3", "rated": True, "reason": "check 1 passed"}, checks)
    _verdict(verdict, passed=True)
    # both there: rated, so its blocks go to published/ (no --allow-unrated needed)
    assert unrated_models([INT8_ID], checks, False, int8_verdict=verdict) == {}
    # the default verdict path is results/int8/agreement.json of the checkout holding results/adapter-checks
    assert unrated_models([INT8_ID], checks, False) == {}
    # the agreement missing: refused, naming the file and the command that makes it
    verdict.unlink()
    with pytest.raises(BenchError) as err:
        unrated_models([INT8_ID], checks, False, int8_verdict=verdict)
    assert f"no int8 agreement verdict at {verdict}" in err.value.message
    assert "docker compose run --rm bench-cpu int8 agreement --against FILE" in err.value.message
    assert "check-adapters bge-v2-m3-int8" not in err.value.message  # a command that is rejected
    # with --allow-unrated it is measured, not published, with the reason
    assert (
        "no int8 agreement verdict" in unrated_models([INT8_ID], checks, True, int8_verdict=verdict)[INT8_ID]
    )
    # a failed agreement is not a rating
    _verdict(verdict, passed=False)
    reason = unrated_models([INT8_ID], checks, True, int8_verdict=verdict)[INT8_ID]
    assert reason.startswith("int8 agreement failed") and "q7" in reason
    # the base model not rated: named
    _verdict(verdict, passed=True)
    write_result("bge-v2-m3", {"model": "bge-v2-m3", "rated": False, "reason": "check 1 failed"}, checks)
    reason = unrated_models([INT8_ID], checks, True, int8_verdict=verdict)[INT8_ID]
    assert reason == "rated by bge-v2-m3's adapter check, which is not passed: check 1 failed"


def test_agreement_for_another_quantised_folder_is_not_a_rating(tmp_path: Path) -> None:
    base = {"model": "bge-v2-m3", "rated": True, "reason": "ok"}
    verdict = _verdict(tmp_path / "agreement.json", passed=True, manifest="abc")
    assert int8_outcome(base, verdict, "abc")["rated"] is True
    got = int8_outcome(base, verdict, "def")
    assert got["rated"] is False and "another quantised folder" in got["reason"]
    verdict.write_text("{}")
    with pytest.raises(BenchError, match="not an int8 agreement verdict"):
        int8_outcome(base, verdict, "abc")


def test_published_cpu_latency_names_what_the_int8_variant_lacks(tmp_path: Path) -> None:
    out = tmp_path / "latency"
    checks = tmp_path / "c"
    r = CliRunner().invoke(
        cli,
        ["latency", "cpu", "--published", "--models", INT8_ID, "--out", str(out), "--checks", str(checks)],
    )
    assert r.exit_code == 1, r.output
    assert f"{INT8_ID} is not rated (rated by bge-v2-m3's adapter check" in r.output
    # the int8 variant runs on the CPU: its base model's check must be the CPU one
    assert scoring_setting("bge-v2-m3", "cpu") == {"device": "cpu", "dtype": "float32"}
    assert f"no adapter-check result for device cpu, dtype float32 in {checks}" in r.output
    assert "check-adapters bge-v2-m3 --device cpu" in r.output and "bge-v2-m3-int8.json" not in r.output
    assert not out.exists()


def test_the_pre_measurement_goes_without_the_servers_int8_verdict(tmp_path: Path) -> None:
    """The desktop's CPU pre-measurement (never published) runs before the server makes the int8 agreement
    verdict (runbook steps 12 and 13): the int8 variant is not refused for lacking it there (found by
    tests/runbook); a plan model without its check still is."""
    out = tmp_path / "latency"
    checks = tmp_path / "c"
    base = ["latency", "cpu", "--pre-measurement", "--out", str(out), "--checks", str(checks)]
    r = CliRunner().invoke(cli, [*base, "--models", INT8_ID])
    assert f"{INT8_ID} is not rated" not in r.output, r.output
    r = CliRunner().invoke(cli, [*base, "--models", "gte-base"])
    assert r.exit_code == 1 and "gte-base has no passed adapter check for this setting" in r.output
