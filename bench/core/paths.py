"""Where things live in a checkout. Every path is relative to the repository root (``repo_root()``)."""

from __future__ import annotations

import os
from pathlib import Path

from analysis.core.plan import INT8_MODEL


def repo_root() -> Path:
    """The repository root: ``$BENCH_ROOT`` if set (tests, the container), else the parent of ``bench/``."""
    env = os.environ.get("BENCH_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[2]


def bundled_dir() -> Path:
    """Real data bundled in the repository (see data/bundled/SOURCES.md), covered by datasets.lock."""
    return repo_root() / "data" / "bundled"


def hub_dir() -> Path:
    """Pinned hub snapshots downloaded by ``bench data fetch`` (git-ignored)."""
    return Path(os.environ.get("BENCH_HUB_DIR", repo_root() / "data" / "hub"))


def models_dir() -> Path:
    """Pinned model snapshots (git-ignored)."""
    return Path(os.environ.get("BENCH_MODELS_DIR", repo_root() / "data" / "models"))


def int8_model_dir() -> Path:
    """Where ``bench int8 quantize`` writes and the ``bge-v2-m3-int8`` adapter reads (git-ignored)."""
    return models_dir() / INT8_MODEL


def model_snapshot_dir(repo: str, revision: str, root: Path | None = None) -> Path:
    """A model snapshot in huggingface_hub's cache layout, ``models--ORG--NAME/snapshots/<revision>/`` under
    ``root`` or ``models_dir()`` (what ``snapshot_download`` writes; the folder name records the commit)."""
    return (root or models_dir()) / ("models--" + repo.replace("/", "--")) / "snapshots" / revision


def cache_dir() -> Path:
    """Caches that are safe to delete (embeddings, ...), git-ignored."""
    return Path(os.environ.get("BENCH_CACHE_DIR", repo_root() / ".cache" / "bench"))


# Where each phase writes its run files by default, repository-relative (its default ``--runs``). The main
# study's runs go to ``runs/``; the checks' reruns and the pitfalls experiment keep theirs under
# ``results/``, beside their verdicts, so they never mix with the main runs. ``bench audit`` (row 7) allows
# ``.trec`` files under ``results/`` only in these folders.
RUN_FOLDERS: dict[str, str] = {
    "quality": "runs",
    "int8 quality": "runs",
    "pitfalls": "results/pitfalls/runs",
    "determinism": "results/determinism/runs",
    "dtype-check cpu-fp32": "results/dtype-check/cpu-fp32/runs",
    "dtype-check gpu": "results/dtype-check/gpu/runs",
}
DTYPE_CHECK_DIR = "results/dtype-check"  # dtype-check's default --runs: <dir>/<session>/runs
