"""A small BEIR-layout dataset cut from the bundled real sample (``tests.support.rehearsal``), and a shared
embedding cache. The session's one rehearsal run is the ``rehearsal`` fixture of tests/conftest.py."""

from __future__ import annotations

import atexit
import gc
from pathlib import Path

import pytest

from tests.support.rehearsal import SMALL_JUDGED, SMALL_OTHER, SMALL_QUERIES, SMALL_WORDS, write_mini_beir

# A rehearsal resumed in this process (test_end_to_end) freezes its long-lived objects after its first stages
# (bench.core.memory.freeze_long_lived) and, since this process froze objects before it (tests/conftest.py),
# leaves them frozen: unfrozen at exit, the interpreter's last collection sees them (nanobind reports
# triton's objects as leaked otherwise)
atexit.register(gc.unfreeze)


@pytest.fixture(scope="session")
def mini_beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interrupted rehearsals' dataset (test_signals; test_end_to_end's Ctrl-C takes the shared run's):
    2 queries, 3 judged passages each and 2 NoMIRACL passages (each cut to its first ``SMALL_WORDS`` words),
    with titles. A resumed rehearsal runs every step, and its latency and int8 steps encode all candidates of
    a call (the corpus at k = 100): a small corpus of short passages keeps that cheap."""
    return write_mini_beir(
        tmp_path_factory.mktemp("mini-beir"),
        query_ids=SMALL_QUERIES,
        n_judged=SMALL_JUDGED,
        n_other=SMALL_OTHER,
        max_words=SMALL_WORDS,
    )


@pytest.fixture(scope="session")
def mini_beir_bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mini dataset without titles and with a query the keyword stage finds nothing for."""
    return write_mini_beir(tmp_path_factory.mktemp("mini-beir-bad"), titles=False, bad_query=True)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench-cache")
