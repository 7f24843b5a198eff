"""jina-v3.5: the card reference (``model.rerank`` under transformers 4.57, references/tf457) against the
adapter, on a fake remote-code snapshot whose ``rerank`` returns results sorted by score (as the card's)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.core.plan import REFERENCE_TRANSFORMERS_VERSION, RERANKERS
from bench.equality.data import EqualityQuery, EqualitySet
from bench.equality.runner import check_one
from bench.rerankers.snapshots import snapshot_path

pytestmark = pytest.mark.model


def tf457_only(root: Path):  # type: ignore[no-untyped-def]
    """Runs only the tf457 (deciding) reference: each further subprocess would cost a torch import."""
    from bench.equality.references import ReferenceUnavailable, run_reference

    plan = RERANKERS["jina-v3.5"]
    assert plan.revision

    def run(spec, queries):  # type: ignore[no-untyped-def]
        if spec.env != "tf457":
            raise ReferenceUnavailable("not run in this test")
        return run_reference(spec, snapshot_path(plan.model, plan.revision, root), queries, timeout_s=600)

    return run


@pytest.fixture(scope="module")
def jina_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.tiny_models import write_jina

    plan = RERANKERS["jina-v3.5"]
    assert plan.revision
    root = tmp_path_factory.mktemp("jina")
    write_jina(snapshot_path(plan.model, plan.revision, root))
    return root


def test_jina_card_reference_under_tf457(
    jina_root: Path, forked_tf457: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_MODELS_DIR", str(jina_root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rng = random.Random(5)
    words = "der fluss die stadt berlin liegt am rhein".split()
    queries = tuple(
        EqualityQuery(
            f"j{i}",
            " ".join(rng.choice(words) for _ in range(3)),
            tuple(f"{i}#{j}" for j in range(10)),
            tuple(" ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) for _ in range(10)),
        )
        for i in range(2)
    )
    result = check_one("jina-v3.5", EqualitySet(queries), runner=tf457_only(jina_root))
    assert "deciding_reference" in result, result.get("reason")
    ref = result["deciding_reference"]
    assert ref["label"] == "card-jina@tf457" and ref["status"] == "ran", result["reason"]
    assert ref["versions"]["transformers"].startswith(REFERENCE_TRANSFORMERS_VERSION + ".")
    assert result["rated"] is True and result["min_spearman"] > 0.9999, result["reason"]
    assert result["further_references"][0]["label"] == "card-jina@main"  # not run here (time)
