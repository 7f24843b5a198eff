"""Decoder CrossEncoder path (Qwen3-Reranker and mxbai layouts) on a tiny random Qwen3ForCausalLM.

Checks the traps of docs/field-notes.md: left padding with a pad token, passage-only truncation that keeps the
instruction, query and yes/no suffix, and the deliberately wrong variants the pitfalls experiment and
the equality checks need (they must give different scores).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.core.plan import QWEN3_INSTRUCTION, RERANKERS
from bench.rerankers.decoder import QWEN3_PREFIX, QWEN3_SUFFIX, DecoderCrossEncoder, MxbaiFormat, Qwen3Format
from bench.rerankers.registry import load_reranker
from bench.rerankers.snapshots import snapshot_path
from tests.rerankers.rerankers_tiny import PASSAGES, QUERY
from tests.support.tiny_models import tiny_snapshot

LONG = "Berlin ist die Hauptstadt von Deutschland " * 30


def model_card_reference(path: Path, query: str, passages: list[str], max_length: int = 8192) -> np.ndarray:
    """The Qwen3-Reranker model card's recipe in plain transformers (independent of the adapter)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    prefix = tok(QWEN3_PREFIX, add_special_tokens=False)["input_ids"]
    suffix = tok(QWEN3_SUFFIX, add_special_tokens=False)["input_ids"]
    bodies = [f"<Instruct>: {QWEN3_INSTRUCTION}\n<Query>: {query}\n<Document>: {p}" for p in passages]
    enc = tok(
        bodies,
        padding=False,
        truncation="longest_first",
        return_attention_mask=False,
        max_length=max_length - len(prefix) - len(suffix),
    )
    enc["input_ids"] = [prefix + ids + suffix for ids in enc["input_ids"]]
    batch = tok.pad(enc, padding=True, return_tensors="pt", max_length=max_length)
    with torch.inference_mode():
        logits = model(**batch).logits[:, -1, :]
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    return (logits[:, yes] - logits[:, no]).float().numpy()


def variant(models_root: Path, name: str, **kw: Any) -> Any:
    snapshot = tiny_snapshot("qwen3-0.6b", models_root)
    return load_reranker("qwen3-0.6b", snapshot_dir=snapshot, variant=name, **kw)


def test_matches_the_model_card_recipe(qwen: Any, models_root: Path) -> None:
    res = qwen.score(QUERY, PASSAGES)
    assert res.scores.dtype == np.float32
    ref = model_card_reference(tiny_snapshot("qwen3-0.6b", models_root), QUERY, PASSAGES)
    np.testing.assert_allclose(res.scores, ref, atol=1e-5)
    assert qwen.meta.extra["instruction"] == QWEN3_INSTRUCTION and qwen.meta.extra["padding"] == "left"
    assert qwen.meta.max_length == 8192


def test_left_padding_ends_every_row_with_the_suffix(qwen: Any) -> None:
    chunk = qwen._chunk(QUERY, PASSAGES)
    ids, mask = chunk.features["input_ids"], chunk.features["attention_mask"]
    suffix = qwen.fmt.suffix
    for row, m, n in zip(ids.tolist(), mask.tolist(), chunk.lengths, strict=True):
        assert row[-len(suffix) :] == suffix
        assert m == [0] * (len(m) - n) + [1] * n
    assert chunk.features["logits_to_keep"] == 1


def test_passage_only_truncation_keeps_query_and_suffix(models_root: Path) -> None:
    short = variant(models_root, "correct", max_length=90)
    res = short.score(QUERY, [LONG, "Zug"])
    assert res.record["truncated_pairs"] == 1 and res.record["max_input_tokens"] == 90
    pair = short.fmt.pair(QUERY, LONG)
    tok = short.fmt.tok
    text = tok.decode(pair.ids)
    assert pair.ids[-len(short.fmt.suffix) :] == short.fmt.suffix
    assert pair.ids[: len(short.fmt.prefix)] == short.fmt.prefix
    assert tok.decode(tok(QUERY, add_special_tokens=False)["input_ids"]) in text
    assert len(pair.ids) == 90 and pair.truncated


def test_whole_input_truncation_loses_the_suffix_and_changes_scores(models_root: Path) -> None:
    right = variant(models_root, "correct", max_length=90)
    wrong = variant(models_root, "whole-input-truncation", max_length=90)
    pair = wrong.fmt.pair(QUERY, LONG)
    assert len(pair.ids) == 90 and pair.ids[-len(wrong.fmt.suffix) :] != wrong.fmt.suffix
    a, b = right.score(QUERY, [LONG]).scores, wrong.score(QUERY, [LONG]).scores
    assert not np.allclose(a, b, atol=1e-4)
    assert wrong.meta.variant == "whole-input-truncation"
    # an input that fits is unchanged by the wrong truncation
    np.testing.assert_allclose(
        right.score(QUERY, ["Zug"]).scores, wrong.score(QUERY, ["Zug"]).scores, atol=1e-6
    )


def test_right_padding_changes_scores_of_padded_rows(qwen: Any, models_root: Path) -> None:
    wrong = variant(models_root, "right-padding")
    good, bad = qwen.score(QUERY, PASSAGES).scores, wrong.score(QUERY, PASSAGES).scores
    longest = int(np.argmax([len(qwen.fmt.pair(QUERY, p).ids) for p in PASSAGES]))
    assert qwen.fmt.pairs(QUERY, PASSAGES) == [
        qwen.fmt.pair(QUERY, p) for p in PASSAGES
    ]  # one call, same ids
    assert wrong.fmt.pairs(QUERY, [LONG, *PASSAGES]) == [wrong.fmt.pair(QUERY, p) for p in [LONG, *PASSAGES]]
    np.testing.assert_allclose(bad[longest], good[longest], atol=1e-5)  # no padding in that row
    others = [i for i in range(len(PASSAGES)) if i != longest]
    assert not np.allclose(bad[others], good[others], atol=1e-4)
    assert wrong.meta.extra["padding"] == "right"


def test_missing_instruction_changes_input_and_scores(qwen: Any, models_root: Path) -> None:
    wrong = variant(models_root, "no-instruction")
    assert wrong.meta.extra["instruction"] == ""
    assert len(wrong.fmt.pair(QUERY, "Zug").ids) < len(qwen.fmt.pair(QUERY, "Zug").ids)
    assert not np.allclose(wrong.score(QUERY, PASSAGES).scores, qwen.score(QUERY, PASSAGES).scores, atol=1e-4)


def test_scores_do_not_depend_on_chunking_or_company(qwen: Any) -> None:
    full = qwen.score(QUERY, PASSAGES).scores
    chunked = DecoderCrossEncoder(dataclasses.replace(qwen.meta, chunk_size=4), qwen.model, qwen.fmt)
    res = chunked.score(QUERY, PASSAGES)
    assert res.record["chunk_size"] == 4
    np.testing.assert_allclose(res.scores, full, atol=1e-5)
    alone = np.array([qwen.score(QUERY, [p]).scores[0] for p in PASSAGES])
    np.testing.assert_allclose(alone, full, atol=1e-5)


def test_query_that_leaves_no_room_is_refused(qwen: Any) -> None:
    fmt = Qwen3Format(qwen.fmt.tok, 60, instruction=QWEN3_INSTRUCTION)
    with pytest.raises(BenchError, match="query would be cut"):
        fmt.pair(LONG, "Zug")
    with pytest.raises(BenchError, match="Unknown adapter variant"):
        Qwen3Format(qwen.fmt.tok, 60, "upside-down", instruction="")


def test_mxbai_format_and_score_tokens(models_root: Path) -> None:
    plan = RERANKERS["mxbai-large-v2"]
    assert plan.revision is not None
    r = load_reranker("mxbai-large-v2", snapshot_dir=snapshot_path(plan.model, plan.revision, models_root))
    fmt = r.fmt
    assert isinstance(fmt, MxbaiFormat) and r.meta.extra["score"].startswith("logit('1') - logit('0')")
    tok = fmt.tok
    assert tok.convert_tokens_to_ids("1") != tok.unk_token_id
    pair = fmt.pair(QUERY, "Zug")
    tail = fmt.sep + fmt.task + fmt.suffix
    assert pair.ids[-len(tail) :] == tail and pair.ids[: len(fmt.prefix)] == fmt.prefix
    # the package lowers max_length so template + input fit the model's positions (512 in the tiny model)
    assert fmt.max_length == 512 - fmt.fixed
    res = r.score(QUERY, [LONG * 3, "Zug"])
    assert res.record["truncated_pairs"] == 1 and res.scores.dtype == np.float32
    cut = fmt.pair(QUERY, LONG * 3)
    assert cut.truncated and cut.ids[-len(tail) :] == tail
    # the chunk's pairs, tokenised in one call, are the pairs one by one
    assert fmt.pairs(QUERY, [LONG * 3, "Zug", *PASSAGES]) == [
        cut,
        pair,
        *(fmt.pair(QUERY, p) for p in PASSAGES),
    ]


def test_pitfall_variants_cover_the_plan(models_root: Path) -> None:
    from bench.core.plan import PITFALL_MAX_LENGTH, PITFALL_MODEL, PITFALL_RUN_IDS
    from bench.rerankers.decoder import PITFALL_VARIANTS

    assert PITFALL_MODEL == "qwen3-0.6b" and tuple(PITFALL_VARIANTS) == PITFALL_RUN_IDS
    assert [v.letter for v in PITFALL_VARIANTS.values()] == ["a", "b", "c", "d1", "d2"]
    scores = {}
    for v in PITFALL_VARIANTS.values():
        snapshot = tiny_snapshot("qwen3-0.6b", models_root)
        r = load_reranker(PITFALL_MODEL, snapshot_dir=snapshot, **v.load_kwargs())
        assert r.meta.max_length == (v.max_length or 8192) and r.meta.variant == v.variant
        scores[v.letter] = r.score(QUERY, [LONG * 2, *PASSAGES]).scores
    assert PITFALL_MAX_LENGTH == 256
    for letter in ("b", "c", "d1"):
        assert not np.allclose(scores[letter], scores["a"], atol=1e-4), letter
    whole, passage = scores["d2"], scores["d1"]
    assert abs(whole[0] - passage[0]) > 1e-4  # the long passage: suffix lost in one, kept in the other
    np.testing.assert_allclose(whole[1:], passage[1:], atol=1e-5)  # inputs that fit agree
