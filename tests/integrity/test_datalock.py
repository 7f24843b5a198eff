"""datasets.lock: the committed bundled entries against the real files and SOURCES.md, locking hub
snapshots laid out like the hub, and every bad input (clear error, exit non-zero, nothing written)."""

from __future__ import annotations

import dataclasses
import fnmatch
import gzip
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core import plan
from bench.core.errors import BenchError
from bench.integrity import coverage, datalock, hub, lockops
from bench.integrity.bundled import bundled_entries
from bench.integrity.hashing import sha256_file


def test_committed_lock_matches_the_bundled_files(repo_root: Path) -> None:
    entries = datalock.read_lock(repo_root / "datasets.lock")
    bundled = {k: e for k, e in entries.items() if e.dataset == "bundled"}
    files = sorted(
        p.relative_to(repo_root).as_posix()
        for p in (repo_root / "data" / "bundled").rglob("*")
        if p.is_file() and p.name != "SOURCES.md"
    )
    assert sorted(bundled) == files and len(files) == 8
    assert bundled == bundled_entries(repo_root)  # recomputed from the files, field by field
    for key, entry in bundled.items():
        assert entry.sha256 == hashlib.sha256((repo_root / key).read_bytes()).hexdigest()
    assert coverage.verify(repo_root, ["bundled"], show_progress=False).keys() == bundled.keys()


def test_bundled_entries_agree_with_sources_note(repo_root: Path) -> None:
    """SHA-256 and row counts written by hand in SOURCES.md agree with what the lock computed."""
    note = (repo_root / "data" / "bundled" / "SOURCES.md").read_text(encoding="utf-8")
    entries = datalock.read_lock(repo_root / "datasets.lock")
    for key, entry in entries.items():
        name = key.rsplit("/", 1)[-1] if "colbert-kit" not in key else "/".join(key.split("/")[-2:])
        row = next(ln for ln in note.splitlines() if ln.startswith(f"| {name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[3] == entry.sha256
        rows_note = int(re.sub(r"[^\d]", "", cells[4].split(" lines, ")[-1]))
        assert rows_note == entry.rows, key
    counts = {k.rsplit("/", 1)[-1]: e.rows for k, e in entries.items()}
    assert counts["topics.miracl-v1.0-de-dev.tsv"] == plan.DEV_QUERIES
    assert counts["qrels.miracl-v1.0-de-dev.tsv"] == plan.DEV_JUDGMENTS


# --- a small checkout with its own lock ---------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of data/bundled plus a hub dir; BENCH_ROOT / BENCH_HUB_DIR point at it; lock written."""
    root = tmp_path / "checkout"
    shutil.copytree(repo_root / "data" / "bundled", root / "data" / "bundled")
    for p in (root / "data" / "bundled").rglob("*"):
        if p.is_file():
            p.chmod(0o644)
    monkeypatch.setenv("BENCH_ROOT", str(root))
    monkeypatch.setenv("BENCH_HUB_DIR", str(root / "hub"))
    result = CliRunner().invoke(cli, ["data", "lock"])
    assert result.exit_code == 0, result.output
    assert "8 added" in result.output
    return root


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["data", *args])


def snapshot_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


TOPICS = "data/bundled/miracl-de-dev/topics.miracl-v1.0-de-dev.tsv"
STOP = "data/bundled/snowball-german-stop/stop.txt"


def test_verify_ok_and_lock_is_idempotent(checkout: Path) -> None:
    result = run("verify")
    assert result.exit_code == 0 and "OK: 8 files" in result.output
    before = (checkout / "datasets.lock").read_bytes()
    again = run("lock")
    assert again.exit_code == 0 and "0 added, 8 already locked and unchanged" in again.output
    assert (checkout / "datasets.lock").read_bytes() == before


def test_one_changed_byte_is_named(checkout: Path) -> None:
    path = checkout / TOPICS
    data = bytearray(path.read_bytes())
    data[100] ^= 0x01
    path.write_bytes(bytes(data))
    result = run("verify")
    assert result.exit_code == 1
    assert f"{path} ({TOPICS}): wrong hash: sha256 {hashlib.sha256(data).hexdigest()}" in result.output
    assert "1 of 8 files do not match" in result.output


def test_missing_and_resized_files_are_all_named(checkout: Path) -> None:
    (checkout / TOPICS).unlink()
    with open(checkout / STOP, "ab") as fh:
        fh.write(b"x")
    with pytest.raises(BenchError) as info:
        coverage.verify(checkout, show_progress=False)
    message = info.value.message
    assert f"({TOPICS}): missing" in message
    size = (checkout / STOP).stat().st_size
    assert f"({STOP}): wrong size: {size} bytes, lock says {size - 1}" in message
    assert "2 of 8 files" in message


def test_lock_refuses_to_overwrite_a_changed_file(checkout: Path) -> None:
    (checkout / STOP).write_bytes((checkout / STOP).read_bytes().replace(b"aber", b"abex", 1))
    before = (checkout / "datasets.lock").read_bytes()
    result = run("lock")
    assert result.exit_code == 1
    assert "refusing to overwrite 1 existing entry" in result.output and STOP in result.output
    assert (checkout / "datasets.lock").read_bytes() == before


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda t: t[: len(t) // 2], "not valid JSON, corrupt or truncated"),
        (lambda t: "", "not valid JSON, corrupt or truncated (line 1, column 1"),
        (lambda t: t.replace('"datasets.lock/1"', '"datasets.lock/9"'), "expected an object with format"),
        (lambda t: t.replace('"size": 4187', '"size": -1'), "size must be a non-negative integer"),
        (lambda t: t.replace('"rows": 231', '"rows": "231"'), "rows must be a non-negative integer"),
        (lambda t: re.sub(r'"sha256": "22a7[0-9a-f]+"', '"sha256": "abc"', t), "sha256 must be 64"),
        (
            lambda t: t.replace(
                '"rows_rule": "snowball words",', '"rows_rule": "snowball words", "extra": 1,'
            ),
            "has fields",
        ),
    ],
)
def test_bad_lock_files(checkout: Path, mangle: Any, message: str) -> None:
    lock = checkout / "datasets.lock"
    lock.write_text(mangle(lock.read_text(encoding="utf-8")), encoding="utf-8")
    before = snapshot_of(checkout)
    for command in (("verify",), ("lock",)):
        result = run(*command)
        assert result.exit_code == 1, result.output
        assert str(lock) in result.output and message in result.output
    assert snapshot_of(checkout) == before


def test_unknown_dataset_name(checkout: Path) -> None:
    result = run("verify", "miracl-fr")
    assert result.exit_code == 1 and "unknown dataset or entry name(s) 'miracl-fr'" in result.output
    result = run("lock", "miracl-fr")
    assert result.exit_code == 1 and "unknown dataset name(s) 'miracl-fr'" in result.output
    result = run("fetch", "miracl-fr")
    assert result.exit_code == 1 and "unknown dataset 'miracl-fr'" in result.output


def test_verify_by_entry_id(checkout: Path) -> None:
    result = run("verify", STOP)
    assert result.exit_code == 0 and "OK: 1 files" in result.output


# --- hub snapshots ------------------------------------------------------------------------------------------


FAKE_ROWS = {"parquet": 3, "jsonl.gz": 2, "gzip": 2, "tsv": 2}


def fake_snapshot(ds: hub.HubDataset) -> None:
    """Files laid out as the hub repository, with the columns the loaders read: small but real formats."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = hub.snapshot_dir(ds.source)
    for spec in ds.files:
        path = base / spec.path
        path.parent.mkdir(parents=True, exist_ok=True)
        names = [f.split("|")[0] for f in spec.fields] or ["_id", "text"]
        if spec.kind == "parquet":
            pq.write_table(pa.table({n: [f"{n}{i}" for i in range(3)] for n in names}), path)
        elif spec.kind in ("jsonl.gz", "gzip"):
            with gzip.open(path, "wt", encoding="utf-8") as fh:
                for docid, title, text in (("1#0", "T", "a"), ("1#1", "", "b")):
                    fh.write(json.dumps({"docid": docid, "title": title, "text": text}) + "\n")
        else:
            cells = "\t".join(spec.fields)
            path.write_text(f"{cells}\n{cells}\n", encoding="utf-8")
    (base / ".cache" / "huggingface").mkdir(parents=True, exist_ok=True)
    (base / ".cache" / "huggingface" / "x.metadata").write_text("ignored")
    (base / "fr-corpus").mkdir(exist_ok=True)
    (base / "fr-corpus" / "other.parquet").write_bytes(b"not ours")


def fake_totals(ds: hub.HubDataset) -> hub.HubDataset:
    """``ds`` with row totals equal to what ``fake_snapshot`` writes (the real ones are the plan's)."""
    totals = tuple(
        dataclasses.replace(
            t, rows=sum(FAKE_ROWS[f.kind] for f in ds.files if fnmatch.fnmatch(f.path, t.pattern))
        )
        for t in ds.row_totals
    )
    return dataclasses.replace(ds, row_totals=totals)


@pytest.fixture
def small_totals(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, ds in list(hub.HUB_DATASETS.items()):
        monkeypatch.setitem(hub.HUB_DATASETS, name, fake_totals(ds))


@pytest.mark.usefixtures("small_totals")
def test_lock_and_verify_hub_snapshots(checkout: Path) -> None:
    for ds in hub.HUB_DATASETS.values():
        fake_snapshot(ds)
    result = run("lock")
    assert result.exit_code == 0, result.output
    entries = datalock.read_lock(checkout / "datasets.lock")
    hub_ids = sorted(k for k, e in entries.items() if e.base == "hub")
    expected = sorted(hub.entry_id(d.source, rel) for d in hub.HUB_DATASETS.values() for rel in d.expected)
    assert hub_ids == expected
    e = entries[hub.entry_id(plan.RERANKING_ID_MAP, plan.RERANKING_ID_MAP_PATH)]
    assert (e.rows, e.rows_rule, e.source.host) == (2, "non-empty lines after gunzip", "huggingface-dataset")
    assert (
        e.path
        == f"{plan.RERANKING_ID_MAP.repo}@{plan.RERANKING_ID_MAP.revision}/{plan.RERANKING_ID_MAP_PATH}"
    )
    e = entries[hub.entry_id(plan.CORPUS_71K, "de-corpus/dev-00000-of-00001.parquet")]
    assert (e.rows, e.rows_rule, e.dataset) == (3, "parquet rows", "corpus-71k")
    assert e.sha256 == sha256_file(hub.snapshot_dir(plan.CORPUS_71K) / "de-corpus/dev-00000-of-00001.parquet")
    assert run("verify", "corpus-71k").exit_code == 0
    (hub.snapshot_dir(plan.CORPUS_71K) / "de-qrels/dev-00000-of-00001.parquet").unlink()
    result = run("verify")
    assert result.exit_code == 1 and "de-qrels/dev-00000-of-00001.parquet): missing" in result.output


def test_lock_of_a_dataset_not_fetched(checkout: Path) -> None:
    result = run("lock", "corpus-full")
    assert (
        result.exit_code == 1
        and "run `docker compose run --rm bench-cpu data fetch corpus-full` first" in result.output
    )


def test_fetch_downloads_the_pinned_revision_with_german_patterns(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    calls: list[dict[str, Any]] = []

    def fake_download(**kwargs: Any) -> str:
        calls.append(kwargs)
        fake_snapshot(next(d for d in hub.HUB_DATASETS.values() if d.source.repo == kwargs["repo_id"]))
        return str(kwargs["local_dir"])

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    result = run("fetch", "reranking", "miracl")
    assert result.exit_code == 0, result.output
    assert [(c["repo_id"], c["revision"], c["repo_type"]) for c in calls] == [
        (plan.RERANKING.repo, plan.RERANKING.revision, "dataset"),
        (plan.MIRACL.repo, plan.MIRACL.revision, "dataset"),
    ]
    assert all(p.startswith(("de-", "miracl-v1.0-de/")) for c in calls for p in c["allow_patterns"])
    assert "reranking: 4 files" in result.output


def test_fetch_offline_exits_2(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def offline(**kwargs: Any) -> str:
        raise OSError("Name or service not known")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    result = run("fetch", "miracl")
    assert result.exit_code == 2 and "needs access to huggingface.co" in result.output


def test_fetch_reports_a_layout_that_differs(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kw: str(kw["local_dir"]))
    result = run("fetch", "corpus-full")
    assert result.exit_code == 1 and "miracl-corpus-v1.0-de/docs-0.jsonl.gz" in result.output


# --- hashing ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 4 * 1024 * 1024 - 1, 4 * 1024 * 1024, 4 * 1024 * 1024 + 1, 9_000_001])
def test_sha256_file_matches_hashlib(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    seen: list[int] = []
    assert sha256_file(path, on_bytes=seen.append) == hashlib.sha256(data).hexdigest()
    assert sum(seen) == size


def test_lock_file_is_sorted_json_with_trailing_newline(repo_root: Path) -> None:
    text = (repo_root / "datasets.lock").read_text(encoding="utf-8")
    doc = json.loads(text)
    assert text.endswith("}\n") and list(doc["entries"]) == sorted(doc["entries"])
    assert doc["format"] == datalock.FORMAT and set(lockops.known_names()) >= {
        e["dataset"] for e in doc["entries"].values()
    }


# --- what the fetch requires, and how it fails early -------------------------------------------------------


def test_dry_run_lists_files_and_columns_without_downloading(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    def no_download(**kwargs: Any) -> str:
        raise AssertionError("--dry-run must not download")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_download)
    result = run("fetch", "--dry-run")
    assert result.exit_code == 0, result.output
    out = result.output
    shards = re.findall(
        r"require miracl-corpus-v1\.0-de/docs-(\d+)\.jsonl\.gz \[jsonl\.gz\] keys docid, title", out
    )
    assert shards == [str(n) for n in range(32)]
    assert "require de-corpus/dev-00000-of-00001.parquet [parquet] columns _id|id, title, text" in out
    assert "require miracl-v1.0-de/topics/topics.miracl-v1.0-de-test-b.tsv [tsv] 2 tab-separated" in out
    assert "miracl-corpus-v1.0-de/docs-*.jsonl.gz: 15,866,222 in all" in out
    assert "topics.miracl-v1.0-de-test-b.tsv: 712 in all" in out
    assert "de-top_ranked/dev-00000-of-00001.parquet [parquet] columns query-id" in out
    assert f"reranking-id-map: {plan.RERANKING_ID_MAP.repo}@{plan.RERANKING_ID_MAP.revision}" in out
    assert not (checkout / "hub").exists()


def test_lock_checks_the_row_totals(checkout: Path) -> None:
    fake_snapshot(hub.dataset("corpus-full"))
    before = (checkout / "datasets.lock").read_bytes()
    result = run("lock", "corpus-full")
    assert result.exit_code == 1
    assert "32 file(s) matching miracl-corpus-v1.0-de/docs-*.jsonl.gz hold 64 rows" in result.output
    assert "corpus-full has 15,866,222 (PLAN.md)" in result.output and "Nothing was locked" in result.output
    assert (checkout / "datasets.lock").read_bytes() == before


def test_unresolvable_revision_names_dataset_revision_and_fix(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx
    import huggingface_hub
    from huggingface_hub.errors import RevisionNotFoundError

    def gone(**kwargs: Any) -> str:
        request = httpx.Request("GET", f"https://huggingface.co/api/datasets/{kwargs['repo_id']}/revision/x")
        raise RevisionNotFoundError("404 Revision Not Found", response=httpx.Response(404, request=request))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", gone)
    result = run("fetch", "corpus-71k")
    assert result.exit_code == 1
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert (
        f"corpus-71k: the pinned revision {plan.CORPUS_71K.revision} of {plan.CORPUS_71K.repo} does not "
        "resolve" in lines[0]
    )
    assert "DEVIATIONS.md entry naming the replacement revision" in lines[0]
    assert "no other revision is tried" in lines[0]


def _download_then(edit: Any) -> Any:
    def download(**kwargs: Any) -> str:
        ds = next(d for d in hub.HUB_DATASETS.values() if d.source.repo == kwargs["repo_id"])
        fake_snapshot(ds)
        edit(hub.snapshot_dir(ds.source))
        return str(kwargs["local_dir"])

    return download


def test_fetch_refuses_a_31_shard_corpus(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def drop_last(base: Path) -> None:
        (base / "miracl-corpus-v1.0-de" / "docs-31.jsonl.gz").unlink()

    monkeypatch.setattr(huggingface_hub, "snapshot_download", _download_then(drop_last))
    result = run("fetch", "corpus-full")
    assert result.exit_code == 1
    assert "miracl-corpus-v1.0-de/docs-31.jsonl.gz: missing" in result.output
    assert "docs-30.jsonl.gz: missing" not in result.output


def test_fetch_names_a_missing_column(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub
    import pyarrow as pa
    import pyarrow.parquet as pq

    def no_title(base: Path) -> None:
        pq.write_table(
            pa.table({"id": ["1#0"], "text": ["x"]}), base / "de-corpus/dev-00000-of-00001.parquet"
        )

    monkeypatch.setattr(huggingface_hub, "snapshot_download", _download_then(no_title))
    result = run("fetch", "corpus-71k")
    assert result.exit_code == 1
    assert "de-corpus/dev-00000-of-00001.parquet: columns ['id', 'text'] lack ['title']" in result.output

    def id_column(base: Path) -> None:  # a later mteb upload: `id` instead of `_id` is fine
        pq.write_table(
            pa.table({"id": ["1#0"], "title": ["T"], "text": ["x"]}),
            base / "de-corpus/dev-00000-of-00001.parquet",
        )

    monkeypatch.setattr(huggingface_hub, "snapshot_download", _download_then(id_column))
    assert run("fetch", "corpus-71k").exit_code == 0


def test_fetch_reads_the_id_map_once(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def json_lines(base: Path) -> None:
        with gzip.open(base / plan.RERANKING_ID_MAP_PATH, "wt") as fh:
            for qid in ("521", "522"):
                fh.write(json.dumps({"query_id": qid, "candidates": ["1#0", "1#1"]}) + "\n")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", _download_then(json_lines))
    result = run("fetch", "reranking-id-map")
    assert result.exit_code == 0 and "reranking-id-map: 2 queries read from data/bm25/de.gz" in result.output

    def odd_format(base: Path) -> None:
        with gzip.open(base / plan.RERANKING_ID_MAP_PATH, "wt") as fh:
            fh.write("521\t1#0,1#1\n")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", _download_then(odd_format))
    result = run("fetch", "reranking-id-map")
    assert result.exit_code == 0
    assert "warning:" in result.output and "neither JSON lines nor a 6-column TREC run" in result.output
    assert "--id-map corpus" in result.output


# --- an empty or shortened lock, and files checked when opened ------------------------


def test_empty_lock_is_refused(checkout: Path) -> None:
    lock = checkout / "datasets.lock"
    doc = json.loads(lock.read_text(encoding="utf-8"))
    doc["entries"] = {}
    lock.write_text(json.dumps(doc), encoding="utf-8")
    result = run("verify")
    assert result.exit_code == 1 and "the lock lists no files" in result.output and "OK" not in result.output


def test_shortened_lock_is_refused_naming_the_unlisted_file(checkout: Path) -> None:
    lock = checkout / "datasets.lock"
    doc = json.loads(lock.read_text(encoding="utf-8"))
    del doc["entries"][TOPICS]
    lock.write_text(json.dumps(doc), encoding="utf-8")
    for args in (("verify",), ("verify", "bundled")):
        result = run(*args)
        assert result.exit_code == 1, result.output
        assert "does not list 1 file(s) the study reads" in result.output
        assert f"{checkout / TOPICS} ({TOPICS})" in result.output


def test_files_are_checked_when_opened(checkout: Path) -> None:
    """After the start-of-command check, a reader that opens an unlisted or changed data file stops with
    the file's name (the rehearsal's reader of the bundled sample here)."""
    from bench.data.bundled import load_sample
    from bench.integrity.enforce import deactivate
    from bench.records.guard import preflight

    shutil.copy(Path(__file__).resolve().parents[2] / "PLAN.md", checkout / "PLAN.md")
    try:
        preflight("rehearsal", lock_names=["bundled"], root=checkout)
        assert len(load_sample(checkout / "data" / "bundled").queries) == 305  # listed and unchanged: reads
        path = checkout / TOPICS
        original = path.read_bytes()
        path.write_bytes(original.replace(b"\t", b"\t ", 1))  # tampered after the check
        with pytest.raises(BenchError, match=r"wrong size.*checked when opened") as err:
            load_sample(checkout / "data" / "bundled")
        assert str(path) in err.value.message
        path.write_bytes(original)
        extra = checkout / "data" / "bundled" / "miracl-de-dev" / "extra.tsv"
        extra.write_text("q\tWer?\n", encoding="utf-8")  # a data file the lock does not list
        from bench.data.miracl import read_topics

        with pytest.raises(BenchError, match="not listed in") as err:
            read_topics(extra)
        assert str(extra) in err.value.message
    finally:
        deactivate()
