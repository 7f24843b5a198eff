"""The local Typesense 0.24.1 handle: start, version, errors, stop by PID."""

from __future__ import annotations

import os

import pytest

from bench.errors import BenchError
from bench.firststage.server import TypesenseServer, free_port, local_typesense

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
