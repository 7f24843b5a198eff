"""The pinned Hugging Face dataset snapshots of the plan: what ``bench data fetch`` downloads, and where.

Plan section: Data. Each snapshot lands in ``bench.paths.hub_dir() / "<owner>/<name>@<revision>"`` (a plain
directory laid out exactly as the hub repository; ``snapshot_dir``). Only the German files are fetched.

Layouts (``allow_patterns``) and how far each was confirmed from public material (the hub itself cannot be
reached from the development machines):

- ``miracl/miracl``: ``miracl-v1.0-<lang>/topics/topics.miracl-v1.0-<lang>-dev.tsv`` and
  ``.../qrels/qrels.miracl-v1.0-<lang>-dev.tsv``; confirmed at this revision for ko (resolve URLs in public
  benchmark code); German by the same naming (Anserini/Pyserini use the same file names for de).
- ``miracl/miracl-corpus``: ``miracl-corpus-v1.0-<lang>/docs-<N>.jsonl.gz``; confirmed at this revision
  (en, ko, ru, zh shards); German has 32 shards according to public benchmark code pinned to this revision.
- ``mteb/MIRACLRetrievalHardNegatives``: ``de-corpus/``, ``de-queries/``, ``de-qrels/`` each with
  ``dev-00000-of-00001.parquet``; confirmed at this revision for de by a public download manifest.
- ``mteb/MIRACLReranking``: ``<lang>-corpus|-queries|-qrels|-top_ranked/dev-00000-of-00001.parquet``;
  confirmed at this revision for en and zh (public source list with sizes and SHA-256); de by analogy.
- ``miracl/mmteb-miracl-reranking``: ``data/bm25/de.gz`` (named by the plan); not otherwise confirmed.

``bench data lock`` locks whatever the snapshot holds under these patterns, so a wrong guess shows up as a
missing file at fetch time (``EXPECTED``), never as an invented hash.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from bench import plan
from bench.errors import BenchError
from bench.integrity.datalock import Entry, Source
from bench.integrity.hashing import sha256_file
from bench.integrity.rows import count_rows
from bench.paths import hub_dir


@dataclass(frozen=True)
class HubDataset:
    name: str
    source: plan.HubSource
    allow_patterns: tuple[str, ...]
    expected: tuple[str, ...]  # files that must be there after a fetch (a subset; globs allowed)


_L = plan.LANGUAGE
_PARQUET = "dev-00000-of-00001.parquet"
HUB_DATASETS: dict[str, HubDataset] = {
    d.name: d
    for d in (
        HubDataset(
            "miracl",
            plan.MIRACL,
            (f"miracl-v1.0-{_L}/topics/*", f"miracl-v1.0-{_L}/qrels/*"),
            (
                f"miracl-v1.0-{_L}/topics/topics.miracl-v1.0-{_L}-dev.tsv",
                f"miracl-v1.0-{_L}/qrels/qrels.miracl-v1.0-{_L}-dev.tsv",
            ),
        ),
        HubDataset(
            "corpus-71k",
            plan.CORPUS_71K,
            (f"{_L}-corpus/*", f"{_L}-queries/*", f"{_L}-qrels/*"),
            (f"{_L}-corpus/{_PARQUET}", f"{_L}-queries/{_PARQUET}", f"{_L}-qrels/{_PARQUET}"),
        ),
        HubDataset(
            "corpus-full",
            plan.CORPUS_FULL,
            (f"miracl-corpus-v1.0-{_L}/docs-*.jsonl.gz",),
            (f"miracl-corpus-v1.0-{_L}/docs-0.jsonl.gz",),
        ),
        HubDataset(
            "reranking",
            plan.RERANKING,
            tuple(f"{_L}-{part}/*" for part in ("corpus", "queries", "qrels", "top_ranked")),
            tuple(f"{_L}-{part}/{_PARQUET}" for part in ("corpus", "queries", "qrels", "top_ranked")),
        ),
        HubDataset(
            "reranking-id-map",
            plan.RERANKING_ID_MAP,
            (plan.RERANKING_ID_MAP_PATH,),
            (plan.RERANKING_ID_MAP_PATH,),
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


def fetch(ds: HubDataset) -> Path:
    """Download the German files of the pinned revision (needs the network and ``huggingface_hub``)."""
    try:
        from huggingface_hub import snapshot_download
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
    except Exception as exc:  # network, auth, unknown revision: all end the command with the reason
        raise BenchError(
            f"could not download {ds.source.repo}@{ds.source.revision} ({type(exc).__name__}: {exc}). "
            "`bench data fetch` needs access to huggingface.co.",
            exit_code=2,
        ) from exc
    missing = missing_expected(ds)
    if missing:
        raise BenchError(
            f"{target}: after the download these expected files are missing: {', '.join(missing)}; the hub "
            "layout differs from bench/integrity/hub.py. Fix the patterns there (and record a deviation)."
        )
    return target


def hub_entries(ds: HubDataset) -> dict[str, Entry]:
    """Lock entries computed from the snapshot's files (BenchError if it has not been fetched)."""
    files = local_files(ds)
    missing = missing_expected(ds)
    if not files or missing:
        raise BenchError(
            f"{snapshot_dir(ds.source)}: snapshot of {ds.name!r} not fetched or incomplete "
            f"(missing: {', '.join(missing) or 'all files'}); run `bench data fetch {ds.name}` first."
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
    return out
