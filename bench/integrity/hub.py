"""The pinned Hugging Face dataset snapshots of the plan: what ``bench data fetch`` downloads, and where.

Plan section: Data. Each snapshot lands in ``bench.core.paths.hub_dir() / "<owner>/<name>@<revision>"`` (a
plain directory laid out exactly as the hub repository; ``snapshot_dir``). Only the German files are fetched.

Layouts as public evidence shows them (ir_datasets, mteb, MIRACL's own loading scripts and scripts pinned to
the plan's revisions; the hub itself cannot be reached from the development machines). Each dataset lists
the files and columns the loaders require (``HubDataset.files``; ``bench data fetch --dry-run`` prints
them) and the row totals checked when the lock is written (``HubDataset.row_totals``):

- ``miracl/miracl``: ``miracl-v1.0-de/topics/topics.miracl-v1.0-de-{dev,test-b}.tsv`` and
  ``.../qrels/qrels.miracl-v1.0-de-dev.tsv``; German has dev and test-B (712 queries, topics only).
- ``miracl/miracl-corpus``: exactly 32 shards ``miracl-corpus-v1.0-de/docs-{0..31}.jsonl.gz``, 15,866,222
  passages.
- ``mteb/MIRACLRetrievalHardNegatives``: ``de-corpus/``, ``de-queries/``, ``de-qrels/`` each with
  ``dev-00000-of-00001.parquet``; the corpus id column is ``_id`` (older uploads) or ``id`` (later ones).
- ``mteb/MIRACLReranking``: ``de-{corpus,queries,qrels,top_ranked}/dev-00000-of-00001.parquet``.
- ``miracl/mmteb-miracl-reranking``: ``data/bm25/de.gz`` (named by the plan; its line format could not be
  seen anywhere; ``bench check-adapters --id-map corpus`` works without it).

A pinned revision that does not resolve (hub history has been rewritten before) stops the fetch naming the
dataset and revision; the fix is a DEVIATIONS.md entry with the replacement revision, never a silent
fallback. ``bench data lock`` locks whatever the snapshot holds under these patterns, so a wrong guess shows
up as a missing file, a missing column or a wrong row total at fetch or lock time, never as an invented hash.
"""

from __future__ import annotations

import fnmatch
import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from bench.core import plan
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.paths import hub_dir
from bench.data import layout
from bench.integrity.datalock import Entry, Source
from bench.integrity.hashing import sha256_file
from bench.integrity.rows import count_rows


@dataclass(frozen=True)
class FileSpec:
    """A file the loaders require: snapshot-relative path, format, and the columns / keys they read.

    ``fields`` entries are alternatives joined by ``|`` (``_id|id``: either column will do)."""

    path: str
    kind: str  # "parquet", "jsonl.gz", "tsv" or "gzip"
    fields: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class RowTotal:
    """Rows that the files matching ``pattern`` must hold together (checked by ``bench data lock``)."""

    pattern: str
    rows: int
    source: str  # where the number comes from


@dataclass(frozen=True)
class HubDataset:
    name: str
    source: plan.HubSource
    allow_patterns: tuple[str, ...]
    files: tuple[FileSpec, ...]  # files that must be there after a fetch
    row_totals: tuple[RowTotal, ...] = ()

    @property
    def expected(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files)


_L = plan.LANGUAGE
_PARQUET = "dev-00000-of-00001.parquet"
_TOPICS = ("qid", "query")  # tab-separated, no header
_QRELS = ("qid", "Q0", "docid", "relevance")


def _shards() -> tuple[FileSpec, ...]:
    folder = layout.CORPUS_FULL_DIR
    keys = layout.CORPUS_FULL_KEYS
    return tuple(
        FileSpec(f"{folder}/docs-{n}.jsonl.gz", "jsonl.gz", keys) for n in range(layout.CORPUS_FULL_SHARDS)
    )


HUB_DATASETS: dict[str, HubDataset] = {
    d.name: d
    for d in (
        HubDataset(
            "miracl",
            plan.MIRACL,
            (f"miracl-v1.0-{_L}/topics/*", f"miracl-v1.0-{_L}/qrels/*"),
            (
                FileSpec(layout.topics_relpath(_L, "dev"), "tsv", _TOPICS),
                FileSpec(layout.qrels_relpath(_L, "dev"), "tsv", _QRELS),
                FileSpec(
                    layout.topics_relpath(_L, layout.TEST_B_SPLIT),
                    "tsv",
                    _TOPICS,
                    "int8 calibration queries; test-B has no qrels",
                ),
            ),
            (
                RowTotal(layout.topics_relpath(_L, "dev"), plan.DEV_QUERIES, "PLAN.md"),
                RowTotal(layout.qrels_relpath(_L, "dev"), plan.DEV_JUDGMENTS, "PLAN.md"),
                RowTotal(
                    layout.topics_relpath(_L, layout.TEST_B_SPLIT),
                    layout.TEST_B_QUERIES,
                    "MIRACL statistics",
                ),
            ),
        ),
        HubDataset(
            "corpus-71k",
            plan.CORPUS_71K,
            (f"{_L}-corpus/*", f"{_L}-queries/*", f"{_L}-qrels/*"),
            (
                FileSpec(
                    layout.CORPUS_71K_FILE,
                    "parquet",
                    ("|".join(layout.CORPUS_71K_ID_COLUMNS), *layout.CORPUS_71K_COLUMNS),
                ),
                FileSpec(f"{_L}-queries/{_PARQUET}", "parquet", (), "locked, not read (queries: miracl)"),
                FileSpec(f"{_L}-qrels/{_PARQUET}", "parquet", (), "locked, not read (qrels: miracl)"),
            ),
            (RowTotal(layout.CORPUS_71K_FILE, plan.CORPUS_71K_PASSAGES, "PLAN.md"),),
        ),
        HubDataset(
            "corpus-full",
            plan.CORPUS_FULL,
            (f"{layout.CORPUS_FULL_DIR}/docs-*.jsonl.gz",),
            _shards(),
            (RowTotal(f"{layout.CORPUS_FULL_DIR}/docs-*.jsonl.gz", plan.CORPUS_FULL_PASSAGES, "PLAN.md"),),
        ),
        HubDataset(
            "reranking",
            plan.RERANKING,
            tuple(f"{_L}-{part}/*" for part in ("corpus", "queries", "qrels", "top_ranked")),
            (
                FileSpec(
                    f"{_L}-queries/{_PARQUET}", "parquet", ("|".join(layout.RERANKING_ID_COLUMNS), "text")
                ),
                FileSpec(
                    f"{_L}-corpus/{_PARQUET}",
                    "parquet",
                    ("|".join(layout.RERANKING_ID_COLUMNS), "text"),
                    "a title column is optional; text already reads 'title text'",
                ),
                FileSpec(f"{_L}-qrels/{_PARQUET}", "parquet", (), "locked, not read"),
                FileSpec(
                    f"{_L}-top_ranked/{_PARQUET}",
                    "parquet",
                    (
                        "|".join(layout.RERANKING_TOP_QUERY_COLUMNS),
                        "|".join(layout.RERANKING_TOP_DOCS_COLUMNS),
                    ),
                ),
            ),
        ),
        HubDataset(
            "reranking-id-map",
            plan.RERANKING_ID_MAP,
            (plan.RERANKING_ID_MAP_PATH,),
            (
                FileSpec(
                    plan.RERANKING_ID_MAP_PATH,
                    "gzip",
                    (),
                    "line format not publicly documented: JSON lines, a JSON array or a 6-column TREC run "
                    "are read; without this file: `bench check-adapters --id-map corpus`",
                ),
            ),
        ),
    )
}


def snapshot_dir(source: plan.HubSource) -> Path:
    """Where the snapshot of ``source`` lives: ``hub_dir()/<owner>/<name>@<revision>``."""
    return hub_dir() / f"{source.repo}@{source.revision}"


def entry_id(source: plan.HubSource, path: str) -> str:
    return f"hub:{source.repo}@{source.revision}:{path}"


def dataset(name: str) -> HubDataset:
    try:
        return HUB_DATASETS[name]
    except KeyError:
        known = ", ".join(["bundled", *HUB_DATASETS])
        raise BenchError(f"unknown dataset {name!r}; known datasets: {known}.") from None


def local_files(ds: HubDataset) -> list[str]:
    """Snapshot-relative paths of the files present that match the dataset's patterns."""
    root = snapshot_dir(ds.source)
    if not root.is_dir():
        return []
    found = []
    for file in sorted(root.rglob("*")):
        rel = file.relative_to(root).as_posix()
        if file.is_file() and not rel.startswith(".cache/"):
            if any(fnmatch.fnmatch(rel, pat) for pat in ds.allow_patterns):
                found.append(rel)
    return found


def missing_expected(ds: HubDataset) -> list[str]:
    present = local_files(ds)
    return [pat for pat in ds.expected if not any(fnmatch.fnmatch(p, pat) for p in present)]


def _present(fields: tuple[str, ...], names: list[str]) -> list[str]:
    """The required fields (``a|b`` alternatives) that ``names`` lacks."""
    return [f for f in fields if not any(alt in names for alt in f.split("|"))]


def _file_problem(path: Path, spec: FileSpec) -> str | None:
    """What is wrong with one fetched file's columns / keys (None: fits what the loaders read)."""
    if not spec.fields:
        return None
    try:
        if spec.kind == "parquet":
            # lazy: pyarrow is heavy; only when parquet is read
            import pyarrow.parquet as pq

            names = list(pq.ParquetFile(path).schema_arrow.names)
        elif spec.kind == "jsonl.gz":
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                first = next((line for line in fh if line.strip()), "")
            obj = json.loads(first) if first else {}
            names = sorted(obj) if isinstance(obj, dict) else []
        else:  # tab-separated text
            with path.open(encoding="utf-8-sig") as fh:
                first = next((line for line in fh if line.strip()), "")
            width = len(first.rstrip("\r\n").split("\t"))
            if width != len(spec.fields):
                return f"{width} tab-separated column(s) in its first line, expected {spec.fields}"
            return None
    except Exception as exc:  # unreadable: the loader would fail the same way, later
        return f"unreadable as {spec.kind} ({type(exc).__name__}: {exc})"
    lacking = _present(spec.fields, names)
    return f"columns {names} lack {lacking}" if lacking else None


def layout_problems(ds: HubDataset) -> list[str]:
    """Each expected file that is missing or lacks a column the loaders read, as one line each."""
    root = snapshot_dir(ds.source)
    out = []
    for spec in ds.files:
        path = root / spec.path
        if not path.is_file():
            out.append(f"{spec.path}: missing")
        elif (problem := _file_problem(path, spec)) is not None:
            out.append(f"{spec.path}: {problem}")
    return out


def describe(ds: HubDataset) -> list[str]:
    """What ``bench data fetch`` will require of ``ds`` (``--dry-run``): files, columns, row totals."""
    patterns = ", ".join(ds.allow_patterns)
    lines = [f"{ds.name}: {ds.source.repo}@{ds.source.revision} (download patterns: {patterns})"]
    for spec in ds.files:
        cols = f" columns {', '.join(spec.fields)}" if spec.fields and spec.kind == "parquet" else ""
        keys = f" keys {', '.join(spec.fields)}" if spec.fields and spec.kind == "jsonl.gz" else ""
        tsv = (
            f" {len(spec.fields)} tab-separated columns ({', '.join(spec.fields)})"
            if spec.kind == "tsv"
            else ""
        )
        note = f"; {spec.note}" if spec.note else ""
        lines.append(f"  require {spec.path} [{spec.kind}]{cols}{keys}{tsv}{note}")
    for total in ds.row_totals:
        lines.append(
            f"  rows    {total.pattern}: {total.rows:,} in all ({total.source}; checked by `bench data lock`)"
        )
    return lines


def fetch(ds: HubDataset) -> Path:
    """Download the German files of the pinned revision (needs the network and ``huggingface_hub``)."""
    try:
        # lazy: huggingface_hub is heavy and needed only to download
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import RevisionNotFoundError
    except ModuleNotFoundError as exc:  # pragma: no cover - a bench-group dependency
        raise BenchError("`bench data fetch` needs the package 'huggingface-hub' (uv sync).") from exc
    target = snapshot_dir(ds.source)
    try:
        snapshot_download(
            repo_id=ds.source.repo,
            repo_type="dataset",
            revision=ds.source.revision,
            allow_patterns=list(ds.allow_patterns),
            local_dir=target,
        )
    except RevisionNotFoundError as exc:
        raise BenchError(
            f"{ds.name}: the pinned revision {ds.source.revision} of {ds.source.repo} does not resolve on "
            "the hub (history rewritten?); no other revision is tried. The fix is a DEVIATIONS.md entry "
            f"naming the replacement revision, then the new pin in bench/core/plan.py ({type(exc).__name__})."
        ) from exc
    except Exception as exc:  # network, auth: all end the command with the reason
        raise BenchError(
            f"could not download {ds.source.repo}@{ds.source.revision} ({type(exc).__name__}: {exc}). "
            "`bench data fetch` needs access to huggingface.co.",
            exit_code=2,
        ) from exc
    problems = layout_problems(ds)
    if problems:
        raise BenchError(
            f"{target}: after the download the snapshot does not fit what the loaders read: "
            f"{'; '.join(problems)}. The hub layout differs from bench/integrity/hub.py "
            f"(`{hint('data fetch --dry-run')}` lists what is required); fix the loader there (and record a "
            "deviation)."
        )
    return target


def check_row_totals(ds: HubDataset, entries: dict[str, Entry]) -> None:
    """Raise unless the locked files' rows add up to each of ``ds.row_totals``."""
    for total in ds.row_totals:
        rows = [e.rows for e in entries.values() if fnmatch.fnmatch(e.source.path, total.pattern)]
        if sum(rows) != total.rows:
            raise BenchError(
                f"{snapshot_dir(ds.source)}: {len(rows)} file(s) matching {total.pattern} hold {sum(rows):,} "
                f"rows, {ds.name} has {total.rows:,} ({total.source}); the snapshot is incomplete or not the "
                "pinned revision's. Nothing was locked; fetch it again."
            )


def hub_entries(ds: HubDataset) -> dict[str, Entry]:
    """Lock entries computed from the snapshot's files (BenchError if it has not been fetched)."""
    files = local_files(ds)
    missing = missing_expected(ds)
    if not files or missing:
        raise BenchError(
            f"{snapshot_dir(ds.source)}: snapshot of {ds.name!r} not fetched or incomplete "
            f"(missing: {', '.join(missing) or 'all files'}); run `{hint(f'data fetch {ds.name}')}` first."
        )
    base = hub_dir()
    out: dict[str, Entry] = {}
    for rel in files:
        file = snapshot_dir(ds.source) / rel
        rows, rule = count_rows(file)
        out[entry_id(ds.source, rel)] = Entry(
            dataset=ds.name,
            base="hub",
            path=file.relative_to(base).as_posix(),
            source=Source(ds.source.repo, ds.source.revision, rel, "huggingface-dataset"),
            size=file.stat().st_size,
            sha256=sha256_file(file),
            rows=rows,
            rows_rule=rule,
        )
    check_row_totals(ds, out)
    return out
