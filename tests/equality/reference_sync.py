"""Syncing the reference environments (``references/<env>``) for tests, and when a failed sync may skip."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

# Skipping a reference environment is allowed only when uv could not reach the network AND this switch is set
# (an offline development machine without uv's cache); every other failure (a broken references/*/uv.lock, a
# missing uv) fails the test, so CI cannot pass silently.
OFFLINE_SKIP_SWITCH = "BENCH_REFERENCE_ENVS_OFFLINE_SKIP"
NETWORK_MARKERS = (
    "dns error",
    "failed to lookup address",
    "name or service not known",
    "temporary failure in name resolution",
    "network is unreachable",
    "connection refused",
    "tcp connect error",
    "error sending request",
    "operation timed out",
)


def sync_failure_verdict(env: str, stderr: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """("skip" | "fail", message) for a failed ``uv sync`` of ``references/<env>``."""
    network = any(marker in stderr.lower() for marker in NETWORK_MARKERS)
    message = f"`uv sync --frozen` in references/{env} failed: {stderr[-400:]}"
    if network and environ.get(OFFLINE_SKIP_SWITCH) == "1":
        return "skip", f"{message} (no network and {OFFLINE_SKIP_SWITCH}=1)"
    if network:
        return "fail", f"{message}\nNo network: set {OFFLINE_SKIP_SWITCH}=1 to skip on an offline machine."
    return "fail", message


def sync_reference_env(env: str) -> Path:
    """The interpreter of ``references/<env>``, synced from its lock with uv if missing. Fails when uv is
    absent or the sync fails; skips only for a missing network with ``OFFLINE_SKIP_SWITCH=1``."""
    import os
    import shutil
    import subprocess

    from bench.equality.references import env_python, references_dir

    py = env_python(env)  # type: ignore[arg-type]
    if not py.exists():
        uv = shutil.which("uv")
        if uv is None:
            pytest.fail(f"uv not on PATH: cannot sync references/{env}; install uv (`pip install uv`)")
        # the environment where env_python looks, never an inherited UV_PROJECT_ENVIRONMENT (the image sets
        # it to /opt/venv: the sync would overwrite the main environment)
        proc = subprocess.run(
            [uv, "sync", "--frozen", "--project", str(references_dir() / env)],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            env={**os.environ, "UV_PROJECT_ENVIRONMENT": str(py.parent.parent)},
        )
        if proc.returncode != 0 or not py.exists():
            verdict, message = sync_failure_verdict(env, proc.stderr, os.environ)
            if verdict == "skip":
                pytest.skip(message)
            pytest.fail(message)
    return py
