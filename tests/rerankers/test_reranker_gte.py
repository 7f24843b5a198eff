"""gte-base: remote code resolved at the pinned code revision, non-persistent buffers restored."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.core.plan import RERANKERS
from bench.rerankers.gte import restore_non_persistent_buffers
from bench.rerankers.registry import load_reranker
from bench.rerankers.snapshots import snapshot_path
from tests.support.tiny_models import build_fake_gte


@pytest.fixture(scope="module")
def gte_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    plan = RERANKERS["gte-base"]
    assert plan.revision and plan.code_repo and plan.code_revision
    root = tmp_path_factory.mktemp("gte")
    build_fake_gte(
        snapshot_path(plan.model, plan.revision, root),
        snapshot_path(plan.code_repo, plan.code_revision, root),
    )
    return root


def test_gte_loads_pinned_code_and_restores_buffers(gte_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv("BENCH_MODELS_DIR", str(gte_root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = load_reranker("gte-base", max_length=64)
    assert r.meta.extra["code"] == "Alibaba-NLP/new-impl@40ced75c3017eb27626c9d4ea981bde21a2662f4"
    assert set(r.meta.extra["restored_buffers"]) == {
        "embeddings.position_ids",
        "embeddings.rotary_emb.inv_freq",
        "embeddings.rotary_emb.cos_cached",
        "embeddings.rotary_emb.sin_cached",
    }
    emb = r.model.model.new.embeddings
    cfg = r.model.model.config
    assert torch.equal(emb.position_ids, torch.arange(cfg.max_position_embeddings))
    fresh = type(emb.rotary_emb)(cfg.hidden_size, cfg.max_position_embeddings, cfg.rope_theta)
    for name, buf in fresh.named_buffers():
        assert torch.equal(getattr(emb.rotary_emb, name), buf), name
    res = r.score("berlin hauptstadt", ["berlin ist die hauptstadt", "hamburg", "zug"])
    assert res.scores.dtype == np.float32 and np.isfinite(res.scores).all()


def test_restore_refuses_a_model_without_new_impl_layout() -> None:
    import torch

    with pytest.raises(BenchError, match="new-impl"):
        restore_non_persistent_buffers(torch.nn.Linear(2, 2))


def test_gte_refuses_code_at_another_revision(
    gte_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    plan = RERANKERS["gte-base"]
    assert plan.revision and plan.code_repo and plan.code_revision
    shutil.copytree(gte_root, tmp_path / "m")
    code = snapshot_path(plan.code_repo, plan.code_revision, tmp_path / "m")
    code.rename(code.with_name("f" * 40))
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tmp_path / "m"))
    with pytest.raises(BenchError, match="remote code Alibaba-NLP/new-impl at pinned revision"):
        load_reranker("gte-base")
