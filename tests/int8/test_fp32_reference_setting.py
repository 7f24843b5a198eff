"""`bench int8 quality` rates bge-v2-m3 by its check in the setting of the quality session that wrote the run
the int8 variant is compared with (found by tests/runbook: the quality phase ran on the CPU, its check is
``bge-v2-m3@cpu-float32.json``, and int8 quality looked only for ``bge-v2-m3.json``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.equality.results import write_result
from bench.int8.commands import fp32_reference_setting
from bench.quality.commands import rated


def test_the_quality_sessions_setting_rates_the_fp32_model(tmp_path: Path) -> None:
    checks = tmp_path / "results" / "adapter-checks"
    payload = {"model": "bge-v2-m3", "rated": True, "reason": "test", "device": "cpu", "dtype": "float32"}
    write_result("bge-v2-m3", payload, checks)
    assert fp32_reference_setting(tmp_path) == ("cuda", None)  # no quality study here: the phase's default
    device, dtype = fp32_reference_setting(tmp_path)
    with pytest.raises(BenchError, match="passed on device cpu, dtype float32"):  # never rates a CUDA run
        rated(["bge-v2-m3"], checks, device=device, dtype=dtype)
    study = tmp_path / "studies" / "quality" / "manifest.json"
    study.parent.mkdir(parents=True)
    study.write_text(json.dumps({"study": {"params": {"device": "cpu", "dtype": None}}}), encoding="utf-8")
    assert fp32_reference_setting(tmp_path) == ("cpu", None)
    keep, skipped, _ = rated(["bge-v2-m3"], checks, device="cpu", dtype=None)
    assert keep == ["bge-v2-m3"] and skipped == {}
