"""The plan's selection of the judged sample: seeded draws, unjudged top-3 passages, controls, duplicates,
shuffled pair numbers, short groups said so; packet without ids; sealed key checked by SHA-256."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.core.plan import SEED
from bench.judged.packet import load_prepared, write_prepared
from bench.judged.selection import GroupSpec, draw, select, top_pairs, unjudged
from tests.judged.judged_inputs import tiny_inputs


def test_draw_is_numpy_choice_with_the_plan_seed() -> None:
    cands = [(f"q{i:02d}", 1, f"d{i}") for i in range(40)]
    expected = np.random.default_rng(20261009).choice(40, size=15, replace=False)
    assert draw(cands, 15) == [(f"q{i:02d}", f"d{i}") for i in expected.tolist()]
    assert SEED == 20261009
    assert draw(cands[:7], 15) == [(q, d) for q, _, d in cands[:7]]  # fewer: all of them


def test_only_unjudged_passages_of_ranks_1_to_3() -> None:
    groups, qrels, _, _ = tiny_inputs()
    cands = unjudged(groups[0].run, qrels, 3)
    assert cands == [(f"q{i}", 2, f"{i}#u1") for i in range(6)]  # rank 4 (u2) never, judged never
    assert len(top_pairs(groups[0].run, 3)) == 18


def test_selection_groups_controls_duplicates_and_shuffle() -> None:
    groups, qrels, _, _ = tiny_inputs()
    sel = select(groups, qrels, per_group=4, control_relevant=2, control_not_relevant=2)
    by_group = {g.group: g for g in sel.groups}
    assert [g.group for g in sel.groups] == [
        "hybrid-71k/m-a@100",
        "hybrid-71k/m-b@100",
        "control-relevant",
        "control-not-relevant",
    ]
    assert by_group["hybrid-71k/m-a@100"].candidates == 6 and len(by_group["hybrid-71k/m-a@100"].drawn) == 4
    assert by_group["hybrid-71k/m-b@100"].candidates == 12  # u1 and u3 at ranks 1, 2
    for key in by_group["control-relevant"].drawn:
        assert qrels[key[0]][key[1]] == 1
    for key in by_group["control-not-relevant"].drawn:
        assert qrels[key[0]][key[1]] == 0
    # the same (query, passage) from two groups is one pair counted in both
    keys = [(p.qid, p.docid) for p in sel.pairs]
    assert len(keys) == len(set(keys))
    drawn_total = sum(len(g.drawn) for g in sel.groups)
    shared = [p for p in sel.pairs if len(p.groups) > 1]
    assert len(sel.pairs) == drawn_total - sum(len(p.groups) - 1 for p in shared)
    assert sorted(p.pair for p in sel.pairs) == list(range(1, len(sel.pairs) + 1))
    assert all((p.control is None) == (p.groups[0].startswith("hybrid")) for p in sel.pairs)
    order = np.random.default_rng(SEED).permutation(len(sel.pairs)).tolist()
    unique = sorted(keys)
    assert [(p.qid, p.docid) for p in sel.pairs] == [unique[i] for i in order]


def test_a_draw_does_not_depend_on_the_other_groups() -> None:
    groups, qrels, _, _ = tiny_inputs()
    both = select(groups, qrels, per_group=4)
    alone = select(list(reversed(groups)), qrels, per_group=4)
    a = {g.group: g.drawn for g in both.groups}
    b = {g.group: g.drawn for g in alone.groups}
    assert a["hybrid-71k/m-a@100"] == b["hybrid-71k/m-a@100"]


def test_short_group_takes_all_and_says_so() -> None:
    groups, qrels, _, _ = tiny_inputs()
    sel = select(groups, qrels)  # the plan's 15 per group, 8 + 7 controls: every group is short here
    g = {x.group: x for x in sel.groups}
    assert g["hybrid-71k/m-a@100"].short and len(g["hybrid-71k/m-a@100"].drawn) == 6
    assert g["control-relevant"].wanted == 8 and len(g["control-relevant"].drawn) == 6
    assert any("only 6 candidate(s) for 15" in n for n in sel.notes())
    with pytest.raises(ValueError, match="unique"):
        select([groups[0], groups[0]], qrels)


def test_packet_shows_only_texts_and_the_key_is_sealed(prepared: Path) -> None:
    packet = json.loads((prepared / "packet.json").read_text(encoding="utf-8"))
    key = json.loads((prepared / "key.json").read_text(encoding="utf-8"))
    for item in packet["pairs"]:
        assert set(item) == {"pair", "query", "passage"}
    raw = (prepared / "packet.json").read_text(encoding="utf-8")
    for forbidden in ("m-a", "m-b", "hybrid", "control", "qid", "docid", "rank", "q0"):
        assert forbidden not in raw.replace("Frage q0", "")  # query text "Frage q0?" aside
    k = {p["pair"]: p for p in key["pairs"]}
    for item in packet["pairs"]:
        assert (
            item["passage"]
            == f"Titel {k[item['pair']]['docid']}\nText des Passus {k[item['pair']]['docid']}."
        )
    loaded = load_prepared(prepared)
    assert len(loaded.packet) == len(loaded.key) == loaded.prepare["pairs"]


def test_a_flipped_byte_or_a_foreign_key_is_refused(prepared: Path, tmp_path: Path) -> None:
    path = prepared / "key.json"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    original = path.read_bytes()
    path.write_bytes(bytes(data))
    with pytest.raises(BenchError, match="do not belong together"):
        load_prepared(prepared)
    path.write_bytes(original)
    load_prepared(prepared)
    # a different preparation never replaces the folder (its journal belongs to it)
    groups, qrels, queries, texts = tiny_inputs()
    other = select(groups[:1], qrels, per_group=2)
    with pytest.raises(BenchError, match="another judged packet"):
        write_prepared(prepared, other, queries, texts, {})
    # the same preparation again is a no-op
    same = select(groups, qrels, per_group=4, control_relevant=2, control_not_relevant=2)
    assert (
        write_prepared(prepared, same, queries, texts, {})["packet_sha256"]
        == load_prepared(prepared).prepare["packet_sha256"]
    )


def test_missing_text_is_an_error(tmp_path: Path) -> None:
    groups, qrels, queries, texts = tiny_inputs()
    sel = select(groups, qrels, per_group=2)
    texts.pop(sel.pairs[0].docid)
    with pytest.raises(BenchError, match="no text for passage id"):
        write_prepared(tmp_path / "x", sel, queries, texts, {})
    assert not (tmp_path / "x").exists()


def test_groupspec_ids_name_stage_and_model() -> None:
    from bench.judged.prepare import group_id

    assert group_id("keyword-full", "bge-v2-m3") == "keyword-full/bge-v2-m3@100"
    assert isinstance(GroupSpec("a", {}).run, dict)
