"""mxbai-large-v2's deciding reference is the vendor package (mxbai-rerank 0.1.6) in references/mxbai: on a
tiny Qwen2 model the adapter must match it, and a wrong variant must not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.equality.check import run_equality
from bench.equality.references import DECIDING, run_reference
from bench.rerankers.registry import load_reranker

pytestmark = pytest.mark.model


def test_adapter_matches_vendor_package(tiny_mxbai: Path, forked_mxbai: Path, queries_factory: Any) -> None:
    queries = queries_factory(3, 10)
    spec = DECIDING["mxbai-large-v2"]
    ref = run_reference(spec, tiny_mxbai, queries, python=forked_mxbai, timeout_s=600)
    assert ref["versions"]["mxbai-rerank"] == "0.1.6"

    def runner(s: Any, qs: Any) -> dict[str, Any]:
        return ref

    adapter = load_reranker("mxbai-large-v2", snapshot_dir=tiny_mxbai)
    result = run_equality("mxbai-large-v2", adapter, queries, spec, [], runner)
    assert result["rated"] is True, result["reason"]
    assert result["min_spearman"] > 0.999
    wrong = load_reranker("mxbai-large-v2", snapshot_dir=tiny_mxbai, variant="right-padding")
    caught = run_equality("mxbai-large-v2", wrong, queries, spec, [], runner)
    assert caught["rated"] is False
