"""The CPU server and the API runs get into the container without a GPU reservation: the
`bench-cpu` service (profile "cpu") is the `bench` service without `deploy`, validated like the rest."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hygiene.test_docker import compose


def test_cpu_service_is_bench_without_the_gpu(repo_root: Path) -> None:
    result = compose(repo_root, "--profile", "cpu", "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    gpu, cpu = services["bench"], services["bench-cpu"]
    assert "deploy" not in cpu
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    assert cpu["profiles"] == ["cpu"]
    same = ("build", "image", "entrypoint", "network_mode", "working_dir", "volumes", "environment")
    assert {k: cpu[k] for k in same} == {k: gpu[k] for k in same}


def test_cpu_service_is_not_started_by_default(repo_root: Path) -> None:
    result = compose(repo_root, "config", "--services")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["bench", "typesense"]


def test_ci_validates_both_profiles(repo_root: Path) -> None:
    for args in (("config", "-q"), ("--profile", "cpu", "config", "-q")):
        result = compose(repo_root, *args)
        assert result.returncode == 0, result.stderr
