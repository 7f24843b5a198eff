"""The full corpus's import order: the check, and the bounded-memory external sort on a miniature corpus
whose shards are out of order."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.data import Passage, sort_passages
from bench.data.hub import iter_jsonl_gz
from bench.data.order import (
    MANIFEST,
    SORTED_FILE,
    check_order,
    external_sort,
    iter_sorted,
    sorted_corpus,
)


def _corpus(n: int) -> list[Passage]:
    """MIRACL-form ids whose numeric order differs from their string order (9#2 < 10#0 < 10#10)."""
    return [
        Passage(f"{i // 12 + 1}#{i % 12}", f"Artikel {i // 12}", f"Text über Nummer {i} " * 3)
        for i in range(n)
    ]


def _write(folder: Path, shards: list[list[Passage]]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, ps in enumerate(shards):
        path = folder / f"docs-{i}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for p in ps:
                fh.write(
                    json.dumps({"docid": p.docid, "title": p.title, "text": p.text}, ensure_ascii=False)
                    + "\n"
                )
        out.append(path)
    return out


def test_check_order_in_order_and_out_of_order(tmp_path: Path) -> None:
    c = _corpus(300)
    good = check_order(_write(tmp_path / "a", [c[:100], c[100:200], c[200:]]))
    assert good.ascending and good.passages == 300 and good.out_of_order == 0 and good.first_violation is None
    # shard 1 and 2 swapped: one descent at the start of docs-1; one id moved inside docs-0
    inner = c[:100]
    inner[10], inner[11] = inner[11], inner[10]
    bad = check_order(_write(tmp_path / "b", [inner, c[200:], c[100:200]]))
    assert not bad.ascending and bad.passages == 300
    assert bad.out_of_order == 2 and bad.duplicates_adjacent == 0
    # 1-based lines: the 12th passage (1#10) follows the 11th (1#11)
    assert bad.first_violation == "docs-0.jsonl.gz:12: 1#10 after 1#11"
    assert "NOT in ascending id order" in bad.note() and "docs-0.jsonl.gz:12" in bad.note()
    dup = check_order(_write(tmp_path / "c", [[*c[:50], c[49]], c[50:60]]))
    assert dup.duplicates_adjacent == 1 and not dup.ascending


def test_external_sort_gives_the_import_order(tmp_path: Path) -> None:
    c = _corpus(5000)
    rng = np.random.default_rng(7)
    shuffled = [c[i] for i in rng.permutation(len(c))]
    shards = _write(tmp_path / "in", [shuffled[i : i + 1200] for i in range(0, 5000, 1200)])
    assert not check_order(shards).ascending
    stream = (p for s in shards for p in iter_jsonl_gz(s))
    out = tmp_path / "sorted"
    inputs = {s.name: "h" + s.name for s in shards}
    m = external_sort(stream, out, run_size=700, inputs=inputs)
    assert m["passages"] == 5000 and m["runs"] == 8 and m["inputs"] == inputs
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST, SORTED_FILE])  # runs removed
    got = list(iter_sorted(out, inputs, expected=5000))
    assert got == sort_passages(list(c))  # the reference: the in-memory sort of the same passages
    assert check_order([out / SORTED_FILE]).ascending
    # the output is used only for the same shards and as written
    with pytest.raises(BenchError, match="other shards"):
        list(iter_sorted(out, {"docs-0.jsonl.gz": "other"}))
    with gzip.open(out / SORTED_FILE, "ab") as fh:
        fh.write(b'{"docid": "999999#0", "title": "", "text": "x"}\n')
    with pytest.raises(BenchError, match="SHA-256 differs"):
        list(iter_sorted(out, inputs))
    # sorted_corpus sorts again when the manifest does not match, and reuses it when it does
    again = list(sorted_corpus(iter(shuffled), tmp_path / "s2", inputs, run_size=1000))
    assert again == got
    assert (
        list(sorted_corpus(iter([]), tmp_path / "s2", inputs)) == got
    )  # reused: the empty stream is not read


def test_duplicates_stop_the_sort_and_leave_nothing(tmp_path: Path) -> None:
    c = _corpus(100)
    with pytest.raises(BenchError, match="occurs twice"):
        external_sort(iter([*c, c[5]]), tmp_path / "out", run_size=30)
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []


def _peak(n: int, run_size: int, tmp: Path) -> int:
    """Peak traced memory of sorting a lazily made, out-of-order stream of ``n`` passages (~2 KB each)."""
    c = (Passage(f"{i // 12 + 1}#{(i * 7) % 12}", "T", f"Wort{i} " * 250) for i in range(n))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        external_sort(c, tmp / f"o{n}-{run_size}", run_size=run_size)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _reader_cost(tmp: Path) -> int:
    """Peak traced memory of one open run during the merge (its gzip reader after the first passage): 8 KiB
    buffers on Python 3.11, 128 KiB on 3.14 (gzip's READ_BUFFER_SIZE), so it differs between Pythons."""
    path = tmp / "one-run.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(200):
            fh.write(json.dumps({"docid": f"{i}#0", "title": "T", "text": f"Wort{i} " * 250}) + "\n")
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        reader = iter_jsonl_gz(path)
        next(reader)
        cost = tracemalloc.get_traced_memory()[1]
        reader.close()
        return cost
    finally:
        tracemalloc.stop()


def test_peak_memory_is_bounded_by_the_run_not_the_corpus(tmp_path: Path) -> None:
    small = _peak(4000, 1000, tmp_path)  # 4 runs merged
    large = _peak(8000, 1000, tmp_path)  # 2x the corpus, same run size (8 runs merged)
    bigger_runs = _peak(4000, 4000, tmp_path)  # same corpus, 4x the run size
    per_run = _reader_cost(tmp_path)
    print(f"peak traced memory: {small:,} / {large:,} / {bigger_runs:,} bytes; one open run {per_run:,}")
    # flat in the corpus size: what 4 more runs add is at most their open readers, never the passages (the
    # 4,000 more passages would be ~8 MB, four times the bound); measured with 8x the corpus (32 runs): Python
    # 3.11 +0.2 MB with 77 KB per reader; 3.14 in the image proxy 3.45 -> 12.2 MB, +8.7 MB with 412 KB per
    # reader, gzip's 128 KiB buffers; with 4x (16 runs) on 3.11: +0.3 MB; with 2x (8 runs) on 3.11: -0.08 MB
    assert large - small < 0.5 * small + (8 - 4) * per_run, (small, large, per_run)
    assert bigger_runs > 2.5 * small, (small, bigger_runs)  # grows with the run size


def test_full_corpus_in_import_order_follows_the_lock_note(tmp_path: Path) -> None:
    """A miniature 32-shard snapshot whose shards are out of order: the note says so, the sort is used."""
    from bench.data.hub import CORPUS_FULL_DIR, CORPUS_FULL_SHARDS
    from bench.data.order import full_corpus_in_import_order
    from bench.integrity import datalock, lockops
    from bench.integrity.hashing import sha256_file

    snap = tmp_path / "snap"
    c = _corpus(CORPUS_FULL_SHARDS * 20)
    chunks = [c[i * 20 : (i + 1) * 20] for i in range(CORPUS_FULL_SHARDS)]
    chunks[3], chunks[17] = chunks[17], chunks[3]  # two shards out of order
    paths = _write(snap / CORPUS_FULL_DIR, chunks)
    entries = {}
    for i, path in enumerate(paths):
        rel = f"miracl-corpus-v1.0-de/docs-{i}.jsonl.gz"
        src = datalock.Source("miracl/miracl-corpus", "a" * 40, rel, "huggingface-dataset")
        entries[rel] = datalock.Entry(
            "corpus-full",
            "repo",
            path.relative_to(tmp_path).as_posix(),
            src,
            path.stat().st_size,
            sha256_file(path),
            20,
            "non-empty lines after gunzip",
        )
    lock = tmp_path / "datasets.lock"
    datalock.write_lock(lock, entries)
    # before the note: the shards as they are (the importer's on-the-fly check would stop)
    _, info = full_corpus_in_import_order(snap, tmp_path / "sorted", lock)
    assert info["lock_note"] is None
    note = lockops.order_note(tmp_path, lock, entries)
    assert note is not None and note["import_order"]["ascending"] is False
    datalock.set_note(lock, "corpus-full", note)
    stream, info = full_corpus_in_import_order(snap, tmp_path / "sorted", lock, run_size=100)
    assert list(stream) == sort_passages(list(c)) and info["source"].startswith("external sort")
    assert "NOT in ascending" in info["lock_note"]
