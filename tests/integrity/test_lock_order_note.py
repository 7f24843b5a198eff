"""``bench data lock`` checks the full corpus's import order and records it in the lock's notes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.integrity import datalock, lockops
from bench.integrity.hashing import sha256_file


def _shard(root: Path, n: int, ids: list[str]) -> datalock.Entry:
    rel = f"hub/miracl-corpus-v1.0-de/docs-{n}.jsonl.gz"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in ids:
            fh.write(json.dumps({"docid": i, "title": "T", "text": "x"}) + "\n")
    src = datalock.Source(
        "miracl/miracl-corpus", "a" * 40, f"miracl-corpus-v1.0-de/docs-{n}.jsonl.gz", "huggingface-dataset"
    )
    return datalock.Entry(
        "corpus-full",
        "repo",
        rel,
        src,
        path.stat().st_size,
        sha256_file(path),
        len(ids),
        "non-empty lines after gunzip",
    )


def test_notes_survive_every_write(tmp_path: Path) -> None:
    lock = tmp_path / "datasets.lock"
    e = _shard(tmp_path, 0, ["1#0"])
    datalock.write_lock(lock, {"a": e})
    datalock.set_note(lock, "corpus-full", {"import_order": {"ascending": True}})
    datalock.add_entries(lock, {"b": e})  # adding entries keeps the notes
    assert datalock.read_notes(lock) == {"corpus-full": {"import_order": {"ascending": True}}}
    assert set(datalock.read_lock(lock)) == {"a", "b"}


def test_order_is_checked_across_shards_and_recorded_once(tmp_path: Path) -> None:
    lock = tmp_path / "datasets.lock"
    # docs-10 must come after docs-9 (numeric shard order), and 10#0 after 9#2 (numeric ids)
    entries = {
        f"s{n}": _shard(tmp_path, n, ids)
        for n, ids in ((0, ["1#0", "1#1"]), (9, ["9#2"]), (10, ["10#0", "10#10"]))
    }
    datalock.write_lock(lock, entries)
    note = lockops.order_note(tmp_path, lock, entries)
    assert note is not None and note["import_order"]["ascending"] is True
    assert note["import_order"]["passages"] == 5
    datalock.set_note(lock, "corpus-full", note)
    assert lockops.order_note(tmp_path, lock, entries) is None  # same shards: not read again
    bad = {**entries, "s10": _shard(tmp_path, 10, ["10#10", "10#0"])}
    again = lockops.order_note(tmp_path, lock, bad)  # another shard hash: checked again
    assert again is not None and again["import_order"]["ascending"] is False
    assert again["import_order"]["first_violation"] == "docs-10.jsonl.gz:2: 10#0 after 10#10"
    assert "NOT in ascending id order" in again["import_order"]["note"]


def test_a_row_count_that_does_not_match_is_an_error(tmp_path: Path) -> None:
    lock = tmp_path / "datasets.lock"
    e = _shard(tmp_path, 0, ["1#0", "1#1"])
    wrong = datalock.Entry(e.dataset, e.base, e.path, e.source, e.size, e.sha256, 3, e.rows_rule)
    datalock.write_lock(lock, {"s0": wrong})
    with pytest.raises(BenchError, match="read 2 passages, the locked rows say 3"):
        lockops.order_note(tmp_path, lock, {"s0": wrong})
