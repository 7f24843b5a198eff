"""Loading jina-v3.5 asks nothing on the terminal (found by the runbook test: the tokenizer was loaded without
``trust_remote_code``, so transformers printed "Do you wish to run the custom code? [y/N]" and waited)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.core.plan import RERANKERS
from bench.rerankers.jina import load_jina
from bench.rerankers.snapshots import snapshot_path
from tests.support.tiny_models import write_jina


def test_jina_tokenizer_loads_without_a_prompt(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    plan = RERANKERS["jina-v3.5"]
    assert plan.revision is not None
    path = write_jina(snapshot_path(plan.model, plan.revision, tmp_path))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model, tokenizer = load_jina(path, device="cpu", dtype="float32")
    out = capfd.readouterr()
    assert "Do you wish to run the custom code" not in out.out + out.err
    assert tokenizer is not None and "berlin" in tokenizer.get_vocab()
    assert hasattr(model, "rerank")
