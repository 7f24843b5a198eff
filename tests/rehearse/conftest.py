"""A small BEIR-layout dataset cut from the bundled real sample (``tests.support.rehearsal``), and a shared
embedding cache. The session's one rehearsal run is the ``rehearsal`` fixture of tests/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.rehearsal import write_mini_beir


@pytest.fixture(scope="session")
def mini_beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mini_beir(tmp_path_factory.mktemp("mini-beir"))


@pytest.fixture(scope="session")
def mini_beir_bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mini dataset without titles and with a query the keyword stage finds nothing for (issue 21)."""
    return write_mini_beir(tmp_path_factory.mktemp("mini-beir-bad"), titles=False, bad_query=True)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench-cache")
