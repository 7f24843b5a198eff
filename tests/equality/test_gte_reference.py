"""gte-base: the deciding reference (card code under transformers 4.57, references/tf457) resolves the
pinned remote code from the same hub cache as the adapter, offline, and agrees with the adapter; uses the
tests' fake gte remote code (tests/support/tiny_models.py)."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from bench.core.plan import REFERENCE_TRANSFORMERS_VERSION, RERANKERS
from bench.equality.data import EqualityQuery, EqualitySet
from bench.equality.runner import check_one
from bench.rerankers.snapshots import snapshot_path

pytestmark = pytest.mark.model
WORDS = ["berlin", "hamburg", "zug", "ist", "die", "hauptstadt"]


@pytest.fixture(scope="module")
def gte_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.tiny_models import build_fake_gte  # builds with torch: imported when used

    plan = RERANKERS["gte-base"]
    assert plan.revision and plan.code_repo and plan.code_revision
    root = tmp_path_factory.mktemp("gte")
    build_fake_gte(
        snapshot_path(plan.model, plan.revision, root),
        snapshot_path(plan.code_repo, plan.code_revision, root),
    )
    return root


def test_gte_deciding_reference_under_tf457(
    gte_root: Path, forked_tf457: Path, forked_main: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_MODELS_DIR", str(gte_root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # transformers keeps remote code per pinned code revision in a modules cache shared by every run on the
    # machine; the reference subprocesses get their own (forked_*: HF_MODULES_CACHE, a folder of this test
    # session), so they run this fake's code, not an older copy
    assert os.environ["HF_MODULES_CACHE"] != str(Path.home() / ".cache" / "huggingface" / "modules")
    rng = random.Random(3)
    queries = tuple(
        EqualityQuery(
            f"g{i}",
            " ".join(rng.choice(WORDS) for _ in range(3)),
            tuple(f"{i}#{j}" for j in range(8)),
            tuple(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(8)),
        )
        for i in range(2)
    )
    result: dict[str, Any] = check_one("gte-base", EqualitySet(queries))  # deciding and further run
    ref = result["deciding_reference"]
    assert ref["label"] == "card-seqcls@tf457" and ref["status"] == "ran", result["reason"]
    assert ref["versions"]["transformers"].startswith(REFERENCE_TRANSFORMERS_VERSION + ".")
    assert result["rated"] is True, result["reason"]
    # The same card code under transformers 5.5.4 is reported only; with this fake it crashes on the
    # uninitialised non-persistent position_ids buffer, the transformers-5 bug the adapter repairs.
    further = result["further_references"][0]
    assert further["label"] == "card-seqcls@main" and further["status"] == "could not run"
    assert "uninitialised non-persistent buffer: position_ids" in further["reason"], further["reason"]
