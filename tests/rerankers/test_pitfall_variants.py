"""Pitfalls experiment (PLAN.md "Pitfalls experiment"): each declared Qwen3 variant differs from (a) on the
token ids exactly as the plan describes, on a tiny offline Qwen3-shaped model with a real byte-level BPE
tokenizer (``tests.support.tiny_models.build_qwen``).

The expected ids are built here from the model card's recipe (prefix + body + suffix, body cut from the end
to ``max_length - len(prefix) - len(suffix)``), independently of ``Qwen3Format``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.core.plan import PITFALL_MAX_LENGTH, PITFALL_MODEL, PITFALL_RUN_IDS, QWEN3_INSTRUCTION
from bench.rerankers.decoder import PITFALL_VARIANTS, QWEN3_PREFIX, QWEN3_SUFFIX
from bench.rerankers.registry import load_reranker
from tests.rerankers.rerankers_tiny import LONG, QUERY
from tests.support.tiny_models import tiny_snapshot

SHORT = "Berlin ist die Hauptstadt."
LONGER = LONG * 2  # longer than 256 tokens with the tiny tokenizer (LONG alone fits)


@pytest.fixture(scope="module")
def variants(models_root: Path) -> dict[str, Any]:
    return {
        v.letter: load_reranker(
            PITFALL_MODEL, snapshot_dir=tiny_snapshot("qwen3-0.6b", models_root), **v.load_kwargs()
        )
        for v in PITFALL_VARIANTS.values()
    }


def card_ids(tok: Any, query: str, passage: str, *, instruction: str, max_length: int) -> list[int]:
    def enc(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    prefix, suffix = enc(QWEN3_PREFIX), enc(QWEN3_SUFFIX)
    body = enc(f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {passage}")
    return prefix + body[: max_length - len(prefix) - len(suffix)] + suffix


def enc(tok: Any, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"])


def contains(seq: list[int], sub: list[int]) -> bool:
    return any(seq[i : i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))


def test_the_five_variants_are_the_plan_ids() -> None:
    assert tuple(PITFALL_VARIANTS) == PITFALL_RUN_IDS and len(set(PITFALL_RUN_IDS)) == 5
    for run_id in PITFALL_RUN_IDS:  # filename-safe and recognisable as the plan's model
        assert run_id.startswith(f"{PITFALL_MODEL}.pitfall-") and "/" not in run_id and "@" not in run_id


def test_a_is_the_model_card_input(variants: dict[str, Any]) -> None:
    a = variants["a"]
    tok = a.fmt.tok
    for passage in (SHORT, LONGER):
        assert a.fmt.pair(QUERY, passage).ids == card_ids(
            tok, QUERY, passage, instruction=QWEN3_INSTRUCTION, max_length=8192
        )
    assert a.meta.extra["padding"] == "left" and a.meta.max_length == 8192


def test_b_differs_only_by_the_empty_instruction(variants: dict[str, Any]) -> None:
    a, b = variants["a"], variants["b"]
    tok = a.fmt.tok
    got = b.fmt.pair(QUERY, SHORT).ids
    assert got == card_ids(tok, QUERY, SHORT, instruction="", max_length=8192)
    instr = enc(tok, QWEN3_INSTRUCTION)
    # (a) carries the instruction's ids, (b) lacks exactly them
    assert len(a.fmt.pair(QUERY, SHORT).ids) - len(got) == len(instr)
    assert contains(a.fmt.pair(QUERY, SHORT).ids, instr) and not contains(got, instr)


def test_c_pads_on_the_right_with_the_same_ids(variants: dict[str, Any]) -> None:
    a, c = variants["a"], variants["c"]
    passages = [SHORT, SHORT + " " + SHORT + " Und mehr Text."]
    ca, cc = a._chunk(QUERY, passages), c._chunk(QUERY, passages)
    pad = a.pad_id
    rows_a, rows_c = ca.features["input_ids"].tolist(), cc.features["input_ids"].tolist()
    n = len(a.fmt.pair(QUERY, SHORT).ids)
    width = len(rows_a[0])
    assert n < width  # the short pair is padded
    assert rows_a[0] == [pad] * (width - n) + a.fmt.pair(QUERY, SHORT).ids  # left: suffix at the end
    assert rows_c[0] == c.fmt.pair(QUERY, SHORT).ids + [pad] * (width - n)  # right: the last ids are pads
    assert cc.features["attention_mask"].tolist()[0] == [1] * n + [0] * (width - n)
    assert rows_a[1] == rows_c[1]  # the longest row has no padding either way
    assert c.meta.extra["padding"] == "right"


def test_d1_cuts_the_passage_and_keeps_the_suffix(variants: dict[str, Any]) -> None:
    d1 = variants["d1"]
    tok = d1.fmt.tok
    pair = d1.fmt.pair(QUERY, LONGER)
    assert len(pair.ids) == PITFALL_MAX_LENGTH and pair.truncated
    assert pair.ids == card_ids(
        tok, QUERY, LONGER, instruction=QWEN3_INSTRUCTION, max_length=PITFALL_MAX_LENGTH
    )
    assert pair.ids[-len(d1.fmt.suffix) :] == d1.fmt.suffix
    assert contains(pair.ids, enc(tok, QWEN3_INSTRUCTION)) and contains(pair.ids, enc(tok, QUERY))
    assert not contains(pair.ids, enc(tok, LONGER))  # the passage lost its end
    # an input that fits is (a)'s input
    assert d1.fmt.pair(QUERY, SHORT).ids == variants["a"].fmt.pair(QUERY, SHORT).ids


def test_d2_cuts_the_end_of_the_whole_input_and_loses_the_suffix(variants: dict[str, Any]) -> None:
    a, d2 = variants["a"], variants["d2"]
    full = a.fmt.pair(QUERY, LONGER).ids  # (a) at the card's 8192: nothing cut
    pair = d2.fmt.pair(QUERY, LONGER)
    assert len(full) > PITFALL_MAX_LENGTH and pair.truncated
    assert pair.ids == full[:PITFALL_MAX_LENGTH]  # the first 256 ids of the whole input, nothing else
    suffix = d2.fmt.suffix
    assert pair.ids[-len(suffix) :] != suffix and not contains(pair.ids, suffix)
    assert d2.fmt.pair(QUERY, SHORT).ids == a.fmt.pair(QUERY, SHORT).ids
    assert d2.meta.variant == "whole-input-truncation" and d2.meta.max_length == PITFALL_MAX_LENGTH


def test_bench_quality_loads_each_run_id_in_its_configuration(models_root: Path) -> None:
    from bench.rerankers.registry import base_model, load_run_model

    for run_id, v in PITFALL_VARIANTS.items():
        r = load_run_model(run_id, snapshot_dir=tiny_snapshot("qwen3-0.6b", models_root))
        assert base_model(run_id) == PITFALL_MODEL and r.meta.id == PITFALL_MODEL
        assert (r.meta.variant, r.meta.max_length) == (v.variant, v.max_length or 8192)
    assert base_model("bge-v2-m3") == "bge-v2-m3"
