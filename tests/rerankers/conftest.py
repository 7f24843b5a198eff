"""Fixtures of the reranker tests: tiny random models in the hub cache layout (tests/support/tiny_models)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiny_models import tiny_models_root, tiny_snapshot


@pytest.fixture(scope="session")
def models_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder holding tiny snapshots for bge-v2-m3, qwen3-0.6b and mxbai-large-v2."""
    root = tmp_path_factory.mktemp("models")
    tiny_models_root(root)
    return root


@pytest.fixture
def use_models_root(models_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCH_MODELS_DIR", str(models_root))
    return models_root


@pytest.fixture(scope="session")
def bge(models_root: Path):  # type: ignore[no-untyped-def]
    import os

    from bench.rerankers.registry import load_reranker

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # the tiny BERT has 128 positions; the adapter's 512 default is for the real model
    return load_reranker("bge-v2-m3", snapshot_dir=tiny_snapshot("bge-v2-m3", models_root), max_length=64)


@pytest.fixture(scope="session")
def qwen(models_root: Path):  # type: ignore[no-untyped-def]
    from bench.rerankers.registry import load_reranker

    return load_reranker("qwen3-0.6b", snapshot_dir=tiny_snapshot("qwen3-0.6b", models_root))
