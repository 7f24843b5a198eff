"""The local Typesense 0.24.1 handle: start, version, errors, stop by PID."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.firststage.server import TypesenseServer, external_typesense, free_port, local_typesense

pytestmark = pytest.mark.typesense


def test_start_version_stop() -> None:
    with local_typesense() as server:
        assert server.version == "0.24.1"
        assert server.url.startswith("http://127.0.0.1:")
        pid = server.pid
        assert pid is not None
        os.kill(pid, 0)  # alive
        with pytest.raises(BenchError, match="rejected the API key"):
            TypesenseServer(server.url, "wrong-key")
    with pytest.raises(ProcessLookupError):
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


def test_chosen_api_port() -> None:
    port = free_port()
    with local_typesense(api_port=port) as server:
        assert server.url == f"http://127.0.0.1:{port}"
