"""Check 1 end to end on tiny offline models: the real adapters against the real reference scripts, run as
subprocesses with the main environment's python (forked from a server that imported torch and transformers,
tests/equality/conftest.py ``forked_main``); a deliberately wrong adapter variant must fail."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bench.core.plan import QWEN3_INSTRUCTION
from bench.equality.check import run_equality
from bench.equality.data import EqualityQuery
from bench.equality.references import DECIDING, ReferenceSpec, ReferenceUnavailable, run_reference
from bench.rerankers.registry import load_reranker

pytestmark = pytest.mark.model


_CACHE: dict[tuple[str, str], dict[str, Any]] = {}


def runner_for(model_dir: Path, batch: Sequence[EqualityQuery] = ()):  # type: ignore[no-untyped-def]
    """Runs the reference subprocess (``run_reference``, one process per reference) once per (model, spec)
    in this test process over ``batch`` plus the asked queries and answers later calls from that run: each
    subprocess start costs a torch + transformers import. tests/equality/test_reference_batch.py compares
    its batch with this run."""

    def run(spec: ReferenceSpec, queries: Sequence[EqualityQuery]) -> dict[str, Any]:
        key = (str(model_dir), repr(spec))
        cached = _CACHE.get(key)
        if cached is None or any(q.qid not in cached["scores"] for q in queries):
            todo = {q.qid: q for q in [*batch, *queries]}
            cached = _CACHE[key] = run_reference(spec, model_dir, list(todo.values()), timeout_s=300)
        return {**cached, "scores": {q.qid: cached["scores"][q.qid] for q in queries}}

    return run


QWEN_SPEC = ReferenceSpec(
    "card-qwen3",
    "main",
    "model-card code in plain transformers",
    {"instruction": QWEN3_INSTRUCTION, "max_length": 96},
)


def qwen_queries(queries_factory: Any) -> tuple[list[EqualityQuery], list[EqualityQuery]]:
    """(long, short): passages of 40-70 words, so every input exceeds max_length 96 and truncation matters;
    and of 3-14 words. tests/equality/test_reference_batch.py runs its batch on both."""
    long = queries_factory(3, 12, long=True)
    return long, [dataclasses.replace(q, qid="s" + q.qid) for q in queries_factory(3, 12)]


@pytest.fixture(scope="module")
def long_queries(queries_factory: Any) -> list[EqualityQuery]:
    return qwen_queries(queries_factory)[0]


@pytest.fixture(scope="module")
def short_queries(queries_factory: Any) -> list[EqualityQuery]:
    return qwen_queries(queries_factory)[1]


@pytest.fixture(scope="module")
def qwen_runner(
    tiny_models: dict[str, Path], long_queries: list[EqualityQuery], short_queries: list[EqualityQuery]
):  # type: ignore[no-untyped-def]
    return runner_for(tiny_models["qwen3-0.6b"], [*long_queries, *short_queries])


@pytest.mark.parametrize("which", ["long", "short"])
def test_qwen3_adapter_matches_card_reference(
    tiny_models: dict[str, Path],
    long_queries: list[EqualityQuery],
    short_queries: list[EqualityQuery],
    qwen_runner: Any,
    forked_main: Path,
    which: str,
) -> None:
    queries = long_queries if which == "long" else short_queries
    adapter = load_reranker("qwen3-0.6b", snapshot_dir=tiny_models["qwen3-0.6b"], max_length=96)
    result = run_equality("qwen3-0.6b", adapter, queries, QWEN_SPEC, [], qwen_runner)
    assert result["rated"] is True, result["reason"]
    assert result["min_spearman"] > 0.999


@pytest.mark.parametrize("variant", ["right-padding", "whole-input-truncation", "no-instruction"])
def test_wrong_variant_is_caught(
    tiny_models: dict[str, Path],
    long_queries: list[EqualityQuery],
    short_queries: list[EqualityQuery],
    qwen_runner: Any,
    forked_main: Path,
    variant: str,
) -> None:
    # right padding only bites where inputs differ in length (short passages, nothing truncated)
    queries = short_queries if variant == "right-padding" else long_queries
    adapter = load_reranker(
        "qwen3-0.6b", snapshot_dir=tiny_models["qwen3-0.6b"], max_length=96, variant=variant
    )
    result = run_equality("qwen3-0.6b", adapter, queries, QWEN_SPEC, [], qwen_runner)
    assert result["rated"] is False
    assert result["verdict"] == "not rated"
    assert "below 0.99" in result["reason"]
    assert result["queries"] and any(not r["pass"] for r in result["queries"])


def test_reference_that_cannot_run_means_not_rated(
    tiny_models: dict[str, Path], queries_factory: Any
) -> None:
    queries = queries_factory(2, 5)
    adapter = load_reranker("bge-v2-m3", snapshot_dir=tiny_models["bge-v2-m3"])
    broken = dataclasses.replace(DECIDING["bge-v2-m3"], env="tf457")

    def missing_env(spec: ReferenceSpec, qs: Sequence[EqualityQuery]) -> dict[str, Any]:
        return run_reference(spec, tiny_models["bge-v2-m3"], qs, python=Path("/nonexistent/python"))

    further = [dataclasses.replace(DECIDING["bge-v2-m3"], description="same card, reported only")]
    result = run_equality("bge-v2-m3", adapter, queries, broken, further, missing_env)
    assert result["rated"] is False
    assert result["reason"].startswith("deciding reference could not run")
    assert result["further_references"][0]["status"] == "could not run"


def test_reference_script_failure_is_reported(tiny_models: dict[str, Path], queries_factory: Any) -> None:
    spec = ReferenceSpec("no-such-reference", "main", "unknown script key")  # run.py exits 2 before torch
    with pytest.raises(ReferenceUnavailable) as info:
        run_reference(spec, tiny_models["qwen3-0.6b"], queries_factory(1, 3), timeout_s=60)
    assert "exited 2" in str(info.value) and "unknown reference" in str(info.value)
