"""Fixtures of the analysis tests: the real MIRACL-de dev qrels bundled in the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.inputs.trec import read_qrels

REPO = Path(__file__).resolve().parents[2]
QRELS_PATH = REPO / "data" / "bundled" / "miracl-de-dev" / "qrels.miracl-v1.0-de-dev.tsv"


@pytest.fixture(scope="session")
def miracl_qrels_path() -> Path:
    return QRELS_PATH


@pytest.fixture(scope="session")
def miracl_qrels() -> dict[str, dict[str, int]]:
    return read_qrels(QRELS_PATH)
