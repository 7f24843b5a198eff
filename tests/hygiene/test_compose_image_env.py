"""Compose hands the Typesense image its typesense service starts to the bench services
(``BENCH_TYPESENSE_IMAGE``), from one pinned value in compose.yaml, and ``bench first-stage`` records it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core import plan
from tests.hygiene.test_docker import compose


def rendered(repo_root: Path) -> dict[str, dict[str, object]]:
    result = compose(repo_root, "--profile", "cpu", "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    services: dict[str, dict[str, object]] = json.loads(result.stdout)["services"]
    return services


def test_the_bench_services_get_the_image_the_typesense_service_starts(repo_root: Path) -> None:
    services = rendered(repo_root)
    started = services["typesense"]["image"]
    assert started == plan.TYPESENSE_IMAGE
    for name in ("bench", "bench-cpu"):
        env = services[name]["environment"]
        assert isinstance(env, dict) and env["BENCH_TYPESENSE_IMAGE"] == started, name


def test_the_image_is_written_once_in_compose(repo_root: Path) -> None:
    text = (repo_root / "compose.yaml").read_text(encoding="utf-8")
    digest = plan.TYPESENSE_IMAGE.split("@", 1)[1]
    assert text.count(digest) == 1 and text.count("typesense/typesense:") == 1


def test_first_stage_records_the_image_and_refuses_another(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.core.errors import BenchError
    from bench.firststage.cli import IMAGE_ENV, reported_image

    monkeypatch.delenv(IMAGE_ENV, raising=False)
    assert reported_image() is None  # outside compose: null in the record
    monkeypatch.setenv(IMAGE_ENV, plan.TYPESENSE_IMAGE)
    assert reported_image() == plan.TYPESENSE_IMAGE
    monkeypatch.setenv(IMAGE_ENV, "typesense/typesense:29.0")
    with pytest.raises(BenchError, match=re.escape("PLAN.md pins typesense/typesense:30.2@sha256:")):
        reported_image()
    res = CliRunner().invoke(cli, ["first-stage", "keyword-plain-71k"])
    assert res.exit_code == 1 and "x-typesense-image was changed" in res.output
