"""Where things live in a checkout. Every path is relative to the repository root (``repo_root()``)."""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The repository root: ``$BENCH_ROOT`` if set (tests, the container), else the parent of ``bench/``."""
    env = os.environ.get("BENCH_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parent.parent


def bundled_dir() -> Path:
    """Real data bundled in the repository (see data/bundled/SOURCES.md), covered by datasets.lock."""
    return repo_root() / "data" / "bundled"


def hub_dir() -> Path:
    """Pinned hub snapshots downloaded by ``bench data fetch`` (git-ignored)."""
    return Path(os.environ.get("BENCH_HUB_DIR", repo_root() / "data" / "hub"))


def models_dir() -> Path:
    """Pinned model snapshots (git-ignored)."""
    return Path(os.environ.get("BENCH_MODELS_DIR", repo_root() / "data" / "models"))


def model_snapshot_dir(repo: str, revision: str, root: Path | None = None) -> Path:
    """A model snapshot in huggingface_hub's cache layout, ``models--ORG--NAME/snapshots/<revision>/`` under
    ``root`` or ``models_dir()`` (what ``snapshot_download`` writes; the folder name records the commit)."""
    return (root or models_dir()) / ("models--" + repo.replace("/", "--")) / "snapshots" / revision


def cache_dir() -> Path:
    """Caches that are safe to delete (embeddings, ...), git-ignored."""
    return Path(os.environ.get("BENCH_CACHE_DIR", repo_root() / ".cache" / "bench"))
