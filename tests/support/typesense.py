"""One Typesense 0.24.1 server per test session (per pytest-xdist worker) for the tests that only need a
server: a server start per test module cost a launcher process, a health wait and a
sweep each time.

``typesense`` (session fixture, tests/conftest.py) starts it; tests/firststage's module fixture ``server``
hands it to a module with no collections in it (``drop_collections``), as a fresh server would be, and drops
what the module made when it ends. Tests that kill, restart or time a server start their own
(``bench.firststage.server.local_typesense``), never this one.
"""

from __future__ import annotations

from bench.firststage.server import TypesenseServer

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
