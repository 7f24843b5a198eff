"""The separate reference environments: locked, pinned as the plan says, and (tf457) able to run a reference.

``references/tf457`` resolves to the same torch/numpy/tokenizers versions as the main lock, so ``uv sync
--frozen`` there reuses the main environment's cached wheels (about a second here, no second torch
download). Running a reference in it: tests/equality/test_check_end_to_end.py.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from bench.equality.references import DECIDING, FURTHER
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
