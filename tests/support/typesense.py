"""One Typesense 0.24.1 server per test session (per pytest-xdist worker) for the tests that only need a
server: a server start per test module cost a launcher process, a health wait and a
sweep each time.

``typesense`` (session fixture, tests/conftest.py) starts it; tests/firststage's module fixture ``server``
hands it to a module with no collections in it (``drop_collections``), as a fresh server would be, and drops
what the module made when it ends. Tests that kill, restart or time a server start their own
(``bench.firststage.server.local_typesense``), never this one.
"""

from __future__ import annotations

import threading
from typing import Any

from bench.firststage.server import TypesenseServer, local_typesense

# What the probes find on the PyPI Typesense 0.24.1 (field notes, D-042), shared by the probe tests and the
# runbook's `bench doctor first-stages`: stemming, stop-word sets, ef, hnsw_params and hybrid need 26.0 or
# later; no typo tolerance on locale fields
HONOURED_0241 = {
    "locale-de",
    "prefix",
    "drop_tokens_threshold",
    "tie-order",
    "vector-k",
    "flat_search_cutoff",
    "hyphen",
}
IGNORED_0241 = {
    "stem",
    "stopwords",
    "stopwords-after-stem",
    "ef",
    "hnsw_params",
    "hybrid",
    "alpha",
    "hyphen-hybrid",  # rejected with the hybrid search, not misread (tests/firststage/test_probe_hyphen.py)
    "num_typos",
    "typo_tokens_threshold",
}


def drop_collections(server: TypesenseServer) -> list[str]:
    """Delete every collection on ``server``; returns their names."""
    names = [c["name"] for c in server.request("GET", "/collections")]
    for name in names:
        server.request("DELETE", f"/collections/{name}", ok=(200, 404))
    return names


class EarlyTypesense:
    """A PyPI Typesense (``local_typesense``: free ports, a temporary data directory) started on a thread of
    its own as soon as this is made, so that its start (1-3 s, mostly waiting for the server's health)
    overlaps the caller's other set-up: the runbook chain's loopback server (tests/runbook) and the audit's
    committed study's (tests/audit). ``what`` names it in the error of a failed start."""

    def __init__(self, what: str, thread_name: str) -> None:
        self.what = what
        self.server: Any = None
        self.error: BaseException | None = None
        self._ready, self._stop = threading.Event(), threading.Event()
        # the thread outlives the server, as local_typesense needs (the parent-death signal follows it)
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with local_typesense() as server:
                self.server = server
                self._ready.set()
                self._stop.wait()
        except BaseException as exc:  # raised by wait(), to the step that needs the server
            self.error = exc
        finally:
            self._ready.set()

    def wait(self) -> Any:
        """The running server, once it is healthy; AssertionError if it did not start."""
        self._ready.wait()
        if self.server is None:
            raise AssertionError(f"{self.what} did not start: {self.error!r}")
        return self.server

    def stop(self, *, wait: bool) -> None:
        """Stop the server on its thread (a server of a temporary data directory is killed at once,
        bench.firststage.server._stop); with ``wait``, until it has ended. Without, if the process ends first,
        the launcher's parent-death rule kills the server (bench.firststage.launcher)."""
        self._stop.set()
        if wait:
            self._thread.join()
