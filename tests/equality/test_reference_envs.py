"""The separate reference environments: locked, pinned as the plan says, and (tf457) able to run a reference.

``references/tf457`` resolves to the same torch/numpy/tokenizers versions as the main lock, so ``uv sync
--frozen`` there reuses the main environment's cached wheels (about a second here, no second torch
download); the test syncs it when uv is available and skips, saying why, when it cannot.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from bench.equality.references import DECIDING, FURTHER, env_python, run_reference
from bench.paths import repo_root
from bench.plan import MXBAI_RERANK_VERSION, REFERENCE_TRANSFORMERS_VERSION, RERANKERS

REFS = repo_root() / "references"


def locked_version(lock: Path, name: str) -> str:
    text = lock.read_text(encoding="utf-8")
    match = re.search(rf'\[\[package\]\]\nname = "{re.escape(name)}"\nversion = "([^"]+)"', text)
    assert match, f"{name} not in {lock}"
    return match.group(1)


@pytest.mark.parametrize("env", ["tf457", "mxbai"])
def test_reference_env_is_locked(env: str) -> None:
    project = tomllib.loads((REFS / env / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["requires-python"] == ">=3.11"
    lock = REFS / env / "uv.lock"
    assert lock.is_file(), f"run `uv lock` in references/{env}"
    assert locked_version(lock, "transformers").startswith(REFERENCE_TRANSFORMERS_VERSION + ".")
    if env == "mxbai":
        assert locked_version(lock, "mxbai-rerank") == MXBAI_RERANK_VERSION


def test_torch_shared_with_main_lock() -> None:
    main = repo_root() / "uv.lock"
    for name in ("torch", "numpy", "tokenizers"):
        assert locked_version(REFS / "tf457" / "uv.lock", name) == locked_version(main, name)


def test_every_local_model_has_a_deciding_reference() -> None:
    local = {m for m, p in RERANKERS.items() if p.local}
    assert set(DECIDING) == local
    assert {DECIDING[m].env for m in ("gte-base", "jina-v3.5", "querit-4b")} == {"tf457"}
    assert {DECIDING[m].env for m in ("bge-v2-m3", "qwen3-0.6b", "qwen3-4b")} == {"main"}
    assert DECIDING["mxbai-large-v2"].name == "vendor-mxbai"
    for model, further in FURTHER.items():  # further references never repeat the deciding one
        assert all(f.label != DECIDING[model].label for f in further)


@pytest.fixture(scope="module")
def tf457_python() -> Path:
    py = env_python("tf457")
    if not py.exists():
        uv = shutil.which("uv")
        if uv is None:
            pytest.skip(
                "uv not on PATH: cannot sync references/tf457 (the deciding run happens on the study machine)"
            )
        proc = subprocess.run(
            [uv, "sync", "--frozen", "--project", str(REFS / "tf457")],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if proc.returncode != 0 or not py.exists():
            pytest.skip(
                f"`uv sync --frozen` in references/tf457 failed (offline, no cache?): {proc.stderr[-300:]}"
            )
    return py


@pytest.mark.model
def test_tf457_env_runs_a_reference(
    tf457_python: Path, tiny_models: dict[str, Path], queries_factory: Any
) -> None:
    queries = queries_factory(2, 6)
    out = run_reference(
        DECIDING["bge-v2-m3"], tiny_models["bge-v2-m3"], queries, python=tf457_python, timeout_s=600
    )
    assert out["versions"]["transformers"].startswith(REFERENCE_TRANSFORMERS_VERSION + ".")
    assert set(out["scores"]) == {"q0", "q1"}
    assert all(len(v) == 6 for v in out["scores"].values())
    from bench.equality.spearman import spearman
    from bench.rerankers.registry import load_reranker

    adapter = load_reranker("bge-v2-m3", snapshot_dir=tiny_models["bge-v2-m3"])
    for q in queries:  # the adapter (transformers 5.5.4) against the card code under 4.57
        assert spearman(adapter.score(q.query, list(q.passages)).scores, out["scores"][q.qid]) > 0.999
