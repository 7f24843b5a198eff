"""The local Typesense 0.24.1 handle: start, version, errors, stop by PID."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.core.errors import BenchError
from bench.firststage.server import (
    LOST_RACE,
    TypesenseServer,
    _wait_healthy,
    external_typesense,
    free_port,
    local_typesense,
)

pytestmark = pytest.mark.typesense


@pytest.fixture(scope="module")
def started() -> dict[str, Any]:
    """One server's whole life on a chosen API port (one start and stop for the two tests that read it):
    what it said while it ran (url, version, pid, whether the pid was alive, the refusal of a wrong key);
    it has been stopped when the tests run."""
    port = free_port()
    facts: dict[str, Any] = {"port": port}
    with local_typesense(api_port=port) as server:
        facts.update(url=server.url, version=server.version, pid=server.pid)
        if server.pid is not None:
            os.kill(server.pid, 0)  # alive (raises if not)
            facts["alive"] = True
        with pytest.raises(BenchError) as wrong:
            TypesenseServer(server.url, "wrong-key")
        facts["wrong_key"] = wrong.value.message
    return facts


def test_start_version_stop(started: dict[str, Any]) -> None:
    assert started["version"] == "0.24.1"
    assert started["url"].startswith("http://127.0.0.1:")
    pid = started["pid"]
    assert pid is not None
    assert started["alive"]  # while it ran
    assert re.search("rejected the API key", started["wrong_key"]), started["wrong_key"]
    with pytest.raises(ProcessLookupError):  # stopped by its context's end
        os.kill(pid, 0)


def test_unreachable() -> None:
    with pytest.raises(BenchError, match="unreachable"):
        TypesenseServer(f"http://127.0.0.1:{free_port()}", "k", timeout=2)


def test_external_handle(typesense: TypesenseServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # the session's server (tests/conftest.py): this test neither starts nor stops one
    monkeypatch.setenv("BENCH_TYPESENSE_URL", typesense.url)
    monkeypatch.setenv("BENCH_TYPESENSE_API_KEY", typesense.api_key)
    with external_typesense() as ext:
        assert ext.version == "0.24.1" and ext.pid is None
    monkeypatch.delenv("BENCH_TYPESENSE_API_KEY")
    with pytest.raises(BenchError, match="BENCH_TYPESENSE_API_KEY"), external_typesense():
        pass


def test_health_timeout_names_the_log(tmp_path: Path) -> None:
    with (
        pytest.raises(BenchError, match="not healthy") as info,
        local_typesense(data_dir=tmp_path / "d", health_timeout=0.0),
    ):
        pass
    assert "Log tail" in info.value.message
    # a log that shows 0.24.1's lost start-up race ends the wait at once (local_typesense then starts afresh)
    log = tmp_path / "lost.log"
    log.write_bytes(b"E1206 raft_server.cpp:601] " + LOST_RACE + b"\n")
    proc = subprocess.Popen(["sleep", "60"])
    try:
        assert _wait_healthy(f"http://127.0.0.1:{free_port()}", proc, log, 60.0, lost_race=True) is False
    finally:
        proc.kill()
        proc.wait()


def test_chosen_api_port(started: dict[str, Any]) -> None:
    assert started["url"] == f"http://127.0.0.1:{started['port']}"
