"""Before keyword-full sends anything: will the full corpus fit this machine? (plan "First stages").

The prediction comes from a fitted model, ``keyword_full_fit.json`` beside this module, written by
``benchmarks/bench_scale_keyword.py --write-fit`` from measured imports of generated German corpora (its
provenance: the measured rows, their load averages, the generator's rule). Every figure is fitted against N
twice, as a power law ``y = a * N**b`` (least squares on log y against log N) and as an affine
``y = c + k * N`` (a fixed cost plus a cost per passage); the prediction is the larger of the two (``MODEL``),
scaled linearly by bytes per passage: the real corpus's over the generated corpus's. The real corpus's
bytes per passage come from the locked shard sizes
(``datasets.lock``, compressed) times the sample's ratio of passage bytes (``title + "\\n" + text``, UTF-8) to
gzip bytes (the sample written in the MIRACL shard format); without a lock, from the stated assumption that
the real passages are as long as the bundled sample's (``SAMPLE_ASSUMPTION``).

The check compares the predicted server memory (the larger of the import peak and the resident memory
after a restart) with ``MemAvailable`` and the predicted data-directory size with the free space of the
data directory's file system (``BENCH_TYPESENSE_DATA_DIR``, default the repository root: point it at the
Docker volume's folder when that lives on another disk). A prediction above what is available refuses,
unless ``--ignore-preflight`` (recorded in the result).

When the lock's import-order note says the shards are not in ascending id order, ``bench first-stage``
first writes their external sort (``bench.data.order``) under ``bench.core.paths.cache_dir()``: all sorted
runs (gzip JSONL at ``order.GZIP_LEVEL``) plus the merged import order, the runs deleted only after the merge,
so the sort's peak is twice the sorted copy, and the merged copy stays on disk while the server's data
directory grows. Its size is the locked shards' gzip bytes times the sample's ratio of gzip bytes at the
sort's level to gzip bytes at ``GZIP_LEVEL`` (or, without a lock, the sample's bytes at the sort's level). The
disk check adds it: on one file system ``max(2 S, S + D)`` (S the sorted copy, D the data directory), on two
file systems ``2 S`` and ``D`` separately. A sort already made for exactly the locked shards is reused and
needs nothing more.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from analysis.core.floatsum import ltr_mean, ltr_sum
from bench.core import paths
from bench.core.errors import BenchError
from bench.core.hints import bench_command
from bench.core.paths import cache_dir
from bench.core.plan import CORPUS_FULL_PASSAGES
from bench.data.bundled import load_sample
from bench.data.order import GZIP_LEVEL as SORT_LEVEL
from bench.data.order import SORT_DIR_NAME, read_manifest, sorted_line
from bench.integrity import datalock

FIT_PATH = Path(__file__).with_name("keyword_full_fit.json")
FIT_FORMAT = "keyword-full-fit/1"
DATA_DIR_ENV = "BENCH_TYPESENSE_DATA_DIR"
FIGURES = (
    "rss_after_import_bytes",
    "rss_peak_import_bytes",
    "rss_after_restart_bytes",
    "data_dir_bytes",
    "import_seconds",
    "restart_seconds",
    "query_server_p50_ms",
    "query_server_p95_ms",
)
SAMPLE_ASSUMPTION = (
    "no corpus-full entries in datasets.lock: assumed the real passages are as long as the bundled sample's "
    "mean (title + '\\n' + text, UTF-8; 42 % of the sample's passages have no title, so this may be short)"
)
MODEL = (
    "per figure two least-squares fits against N: a power law y = a * N**b (on log y against log N) and "
    "an affine y = c + k * N; the prediction is the larger of the two, scaled linearly by bytes per passage"
)
GZIP_LEVEL = 6  # gzip's default; the level of the hub shards is not known


def fit_power_law(ns: Sequence[float], ys: Sequence[float]) -> dict[str, float]:
    """``y = a * N**b`` by least squares on (log N, log y); needs two sizes and positive values."""
    if len(ns) != len(ys) or len(ns) < 2:
        raise BenchError(f"a fit needs at least two sizes, got {len(ns)}")
    if min(ns) <= 0 or min(ys) <= 0:
        raise BenchError(f"a power-law fit needs positive values, got N={list(ns)}, y={list(ys)}")
    lx = [math.log(x) for x in ns]
    ly = [math.log(y) for y in ys]
    mx, my = ltr_mean(lx), ltr_mean(ly)
    sxx = ltr_sum((x - mx) ** 2 for x in lx)
    if sxx == 0:
        raise BenchError("a fit needs at least two different sizes")
    b = ltr_sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / sxx
    a = math.exp(my - b * mx)
    resid = max(abs(a * x**b / y - 1.0) for x, y in zip(ns, ys, strict=True))
    return {"a": a, "b": b, "max_rel_residual": resid, "points": float(len(ns))}


def fit_affine(ns: Sequence[float], ys: Sequence[float]) -> dict[str, float]:
    """``y = c + k * N`` by least squares (a fixed cost plus a cost per passage)."""
    if len(ns) != len(ys) or len(ns) < 2:
        raise BenchError(f"a fit needs at least two sizes, got {len(ns)}")
    mx, my = ltr_mean(ns), ltr_mean(ys)
    sxx = ltr_sum((x - mx) ** 2 for x in ns)
    if sxx == 0:
        raise BenchError("a fit needs at least two different sizes")
    k = ltr_sum((x - mx) * (y - my) for x, y in zip(ns, ys, strict=True)) / sxx
    c = my - k * mx
    resid = max(abs((c + k * x) / y - 1.0) for x, y in zip(ns, ys, strict=True))
    return {"c": c, "k": k, "max_rel_residual": resid, "points": float(len(ns))}


def fit_figure(ns: Sequence[float], ys: Sequence[float]) -> dict[str, dict[str, float]]:
    """Both models of one figure; ``predict`` takes the larger of their predictions."""
    return {"power_law": fit_power_law(ns, ys), "affine": fit_affine(ns, ys)}


def predict_models(fit: Mapping[str, Mapping[str, float]], n: float) -> dict[str, float]:
    p, a = fit["power_law"], fit["affine"]
    return {"power_law": float(p["a"] * n ** p["b"]), "affine": float(a["c"] + a["k"] * n)}


def predict(fit: Mapping[str, Mapping[str, float]], n: float, bytes_scale: float = 1.0) -> float:
    """The larger (more cautious) of the two models' predictions at ``n``, scaled by bytes per passage."""
    return max(predict_models(fit, n).values()) * bytes_scale


def write_fit(
    figures: Mapping[str, Mapping[str, float]],
    *,
    sizes: Sequence[int],
    generated_mean_passage_bytes: float,
    provenance: Mapping[str, Any],
    path: Path = FIT_PATH,
) -> None:
    write_json_atomic(
        path,
        {
            "format": FIT_FORMAT,
            "model": MODEL,
            "sizes": list(sizes),
            "generated_mean_passage_bytes": generated_mean_passage_bytes,
            "figures": {k: dict(v) for k, v in figures.items()},
            "provenance": dict(provenance),
        },
    )


def read_fit(path: Path = FIT_PATH) -> dict[str, Any]:
    if not path.is_file():
        raise BenchError(
            f"{path}: the keyword-full scale fit is missing; write it with "
            "benchmarks/bench_scale_keyword.py --fit-only --write-fit (after measuring; docs/performance.md),"
            " or pass --ignore-preflight"
        )
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise BenchError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); restore it with git") from exc
    if data.get("format") != FIT_FORMAT or not isinstance(data.get("figures"), dict):
        raise BenchError(f"{path}: expected format {FIT_FORMAT!r} with 'figures'; restore it with git")
    missing = [f for f in FIGURES if f not in data["figures"]]
    if missing:
        raise BenchError(f"{path}: figures {missing} missing; rewrite it with bench_scale_keyword.py")
    return data


@functools.cache
def _sample_sizes() -> tuple[int, int, dict[int, int]]:
    """(passages, passage bytes, {gzip level: gzip bytes}) of the bundled sample (fixed, locked data: computed
    once per process) in the MIRACL shard format, each line as ``bench.data.order`` writes it
    (:func:`sorted_line`), at ``GZIP_LEVEL`` and at the external sort's level. The lines are compressed in one
    write: deflate's output does not depend on how its input is split, so the bytes are those of the lines
    written one by one (0.5 s less; the two levels' figures from one pass over the passages)."""
    corpus = load_sample().corpus
    raw = sum(len(p.passage_text.encode()) for p in corpus)
    data = b"".join(sorted_line(p) for p in corpus)
    sizes = {}
    for level in {GZIP_LEVEL, SORT_LEVEL}:
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=level, mtime=0) as fh:
            fh.write(data)
        sizes[level] = len(buf.getvalue())
    return len(corpus), raw, sizes


def _sample_bytes() -> tuple[float, float]:
    """(mean passage bytes, gzip bytes per passage) of the bundled sample in the MIRACL shard format."""
    n, raw, sizes = _sample_sizes()
    return raw / n, sizes[GZIP_LEVEL] / n


def _sample_sorted_ratio() -> tuple[float, float]:
    """(gzip bytes per passage at the external sort's level, that over the gzip bytes at ``GZIP_LEVEL``) of
    the bundled sample, written line by line as ``bench.data.order`` writes its runs."""
    n, _, sizes = _sample_sizes()
    return sizes[SORT_LEVEL] / n, sizes[SORT_LEVEL] / sizes[GZIP_LEVEL]


@dataclass(frozen=True)
class SortNeed:
    """The external sort's disk, as ``bench first-stage keyword-full`` would write it (module docstring)."""

    order: str  # what the lock's import-order note says, in words
    counted: bool  # whether the disk check adds the sort (the lock says the shards are out of order)
    sorted_copy_bytes: float  # S: the merged import order (and, together, the runs)
    peak_bytes: float  # during the sort: all runs plus the merged file
    size_source: str
    sort_dir: str
    free_disk_bytes: int | None


def sort_need(n: int, *, lock_path: Path | None = None, sort_dir: Path | None = None) -> SortNeed:
    lock_path = lock_path or paths.repo_root() / datalock.LOCK_NAME
    sort_dir = sort_dir or cache_dir() / SORT_DIR_NAME
    entries = datalock.read_lock(lock_path) if lock_path.exists() else {}
    shards = [e for e in entries.values() if e.dataset == "corpus-full"]
    per_passage, ratio = _sample_sorted_ratio()
    if shards:
        size = sum(e.size for e in shards)
        copy = size * ratio
        source = (
            f"{size:,} locked gzip bytes x sample ratio {ratio:.3f} (gzip level of the sort / level "
            f"{GZIP_LEVEL})"
        )
    else:
        copy = n * per_passage
        source = f"{n:,} passages x {per_passage:.1f} gzip bytes per sample passage at the sort's level"
    note = datalock.read_notes(lock_path).get("corpus-full") if lock_path.exists() else None
    order = note.get("import_order") if isinstance(note, dict) else None
    counted = False
    if not shards:
        words = "not known (corpus-full not locked here): if its shards are out of order, a sort is added"
    elif not isinstance(order, dict):
        words = "not checked at lock time (no import-order note); the importer checks on the fly"
    elif order.get("ascending") is True:
        words = "ascending at lock time: imported as it is, no sort"
    else:
        inputs = {e.source.path: e.sha256 for e in shards}
        manifest = read_manifest(sort_dir)
        if manifest is not None and manifest.get("inputs") == inputs:
            words = f"not ascending at lock time; the sort in {sort_dir} matches the locked shards (reused)"
        else:
            words = "not ascending at lock time: sorted before the import (bench.data.order)"
            counted = True
    return SortNeed(
        order=words,
        counted=counted,
        sorted_copy_bytes=copy,
        peak_bytes=2 * copy,
        size_source=source,
        sort_dir=str(sort_dir),
        free_disk_bytes=_free(sort_dir),
    )


def _existing(path: Path | str) -> Path:
    """``path`` or its nearest existing parent (a folder not made yet lives on its parent's file system)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _free(path: Path) -> int | None:
    """Free bytes of the file system that holds ``path`` (or its nearest existing parent)."""
    try:
        return shutil.disk_usage(_existing(path)).free
    except OSError:
        return None


def _same_fs(a: str, b: str) -> bool:
    def dev(path: str) -> int | None:
        try:
            return os.stat(_existing(path)).st_dev
        except OSError:
            return None

    da, db = dev(a), dev(b)
    return da is not None and da == db


def real_bytes_per_passage(lock_path: Path | None = None) -> tuple[float, str]:
    """The real corpus's passage bytes (see the module docstring) and where the number came from."""
    lock_path = lock_path or paths.repo_root() / datalock.LOCK_NAME
    entries = datalock.read_lock(lock_path) if lock_path.exists() else {}
    shards = [e for e in entries.values() if e.dataset == "corpus-full"]
    mean, gz = _sample_bytes()
    if not shards:
        return mean, f"{SAMPLE_ASSUMPTION}: {mean:.1f} bytes"
    size, rows = sum(e.size for e in shards), sum(e.rows for e in shards)
    real = size / rows * (mean / gz)
    return real, (
        f"{len(shards)} locked shards: {size:,} gzip bytes / {rows:,} rows x sample ratio {mean / gz:.3f} "
        f"(passage bytes / gzip bytes at level {GZIP_LEVEL}) = {real:.1f} bytes"
    )


@dataclass(frozen=True)
class Prediction:
    passages: int
    passages_source: str
    bytes_per_passage: float
    bytes_source: str
    bytes_scale: float
    memory_bytes: float
    disk_bytes: float
    import_seconds: float
    restart_seconds: float
    available_memory_bytes: int | None
    free_disk_bytes: int | None
    data_dir: str
    fit_file: str
    fit_sizes: list[int]
    model: str
    sort: SortNeed | None = None

    def disk_needs(self) -> list[tuple[str, float, int | None, str]]:
        """(folder, bytes needed, bytes free, what) per file system the run writes to."""
        s = self.sort
        if s is None or not s.counted:
            return [(self.data_dir, self.disk_bytes, self.free_disk_bytes, "data directory")]
        if _same_fs(self.data_dir, s.sort_dir):
            need = max(s.peak_bytes, s.sorted_copy_bytes + self.disk_bytes)
            what = (
                f"data directory {_gib(self.disk_bytes)} + sorted copy {_gib(s.sorted_copy_bytes)} "
                f"(the sort's peak, runs + merged, {_gib(s.peak_bytes)})"
            )
            return [(self.data_dir, need, self.free_disk_bytes, what)]
        return [
            (self.data_dir, self.disk_bytes, self.free_disk_bytes, "data directory"),
            (s.sort_dir, s.peak_bytes, s.free_disk_bytes, "external sort: sorted runs + merged import order"),
        ]

    @property
    def problems(self) -> list[str]:
        out = []
        if self.available_memory_bytes is not None and self.memory_bytes > self.available_memory_bytes:
            out.append(
                f"server memory: needs {_gib(self.memory_bytes)}, this machine has "
                f"{_gib(self.available_memory_bytes)} available (MemAvailable)"
            )
        for folder, need, free, what in self.disk_needs():
            if free is not None and need > free:
                out.append(f"disk: needs {_gib(need)} ({what}), {folder} has {_gib(free)} free")
        return out

    def _sort_lines(self) -> list[str]:
        s = self.sort
        if s is None:
            return []
        lines = [
            f"  import order: {s.order}",
            f"  sorted copy of the corpus {_gib(s.sorted_copy_bytes)}, the sort's peak (sorted runs + merged "
            f"import order) {_gib(s.peak_bytes)} in {s.sort_dir} ({s.size_source}); "
            + ("added to the disk check" if s.counted else "not added"),
        ]
        if s.counted:
            for folder, need, free, what in self.disk_needs():
                lines.append(
                    f"  disk needed at {folder}: {_gib(need)} ({what}) | free "
                    + (_gib(free) if free is not None else "unknown")
                )
        return lines

    def record(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "disk_needs": [
                {"folder": f, "bytes": need, "free_bytes": free, "what": what}
                for f, need, free, what in self.disk_needs()
            ],
            "problems": self.problems,
        }

    def text(self) -> str:
        lines = [
            f"preflight keyword-full: {self.passages:,} passages ({self.passages_source})",
            f"  bytes per passage {self.bytes_per_passage:.1f} ({self.bytes_source}); "
            f"scale over the fit's generated corpus {self.bytes_scale:.3f}",
            f"  predicted server memory {_gib(self.memory_bytes)} | available "
            + (_gib(self.available_memory_bytes) if self.available_memory_bytes is not None else "unknown"),
            f"  predicted data directory {_gib(self.disk_bytes)} | free at {self.data_dir} "
            + (_gib(self.free_disk_bytes) if self.free_disk_bytes is not None else "unknown"),
            *self._sort_lines(),
            f"  predicted import {self.import_seconds / 3600:.1f} h, "
            f"restart {self.restart_seconds / 60:.1f} min",
            f"  how: {self.model}, fitted on N = {', '.join(f'{n:,}' for n in self.fit_sizes)} "
            f"({self.fit_file}); measured with Typesense 0.24.1 on a loaded 2-core machine, the study "
            "runs 30.2: an estimate, not a guarantee",
        ]
        return "\n".join(lines)


def _gib(x: float) -> str:
    return f"{x / 2**30:.1f} GiB"


def available_memory() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def corpus_rows(lock_path: Path | None = None) -> tuple[int, str]:
    lock_path = lock_path or paths.repo_root() / datalock.LOCK_NAME
    entries = datalock.read_lock(lock_path) if lock_path.exists() else {}
    rows = sum(e.rows for e in entries.values() if e.dataset == "corpus-full")
    if rows:
        return rows, f"rows of the corpus-full shards in {lock_path.name}"
    return CORPUS_FULL_PASSAGES, "the plan's row count; corpus-full is not locked here"


def keyword_full_prediction(
    *,
    fit_path: Path = FIT_PATH,
    lock_path: Path | None = None,
    data_dir: Path | None = None,
    sort_dir: Path | None = None,
) -> Prediction:
    fit = read_fit(fit_path)
    n, n_source = corpus_rows(lock_path)
    real, source = real_bytes_per_passage(lock_path)
    scale = real / float(fit["generated_mean_passage_bytes"])
    f = fit["figures"]
    ddir = data_dir or Path(os.environ.get(DATA_DIR_ENV) or paths.repo_root())
    try:
        free: int | None = shutil.disk_usage(ddir).free
    except OSError:
        free = None
    memory = max(
        predict(f["rss_peak_import_bytes"], n, scale), predict(f["rss_after_restart_bytes"], n, scale)
    )
    return Prediction(
        passages=n,
        passages_source=n_source,
        bytes_per_passage=real,
        bytes_source=source,
        bytes_scale=scale,
        memory_bytes=memory,
        disk_bytes=predict(f["data_dir_bytes"], n, scale),
        import_seconds=predict(f["import_seconds"], n, scale),
        restart_seconds=predict(f["restart_seconds"], n, scale),
        available_memory_bytes=available_memory(),
        free_disk_bytes=free,
        data_dir=str(ddir),
        fit_file=fit_path.name,
        fit_sizes=[int(x) for x in fit.get("sizes", [])],
        model=str(fit.get("model")),
        sort=sort_need(n, lock_path=lock_path, sort_dir=sort_dir),
    )


def check(prediction: Prediction, *, ignore: bool) -> dict[str, Any]:
    """The record for the result; raises (exit 1) when the prediction exceeds the machine, unless
    ``ignore``."""
    problems = prediction.problems
    if problems and not ignore:
        raise BenchError(
            "keyword-full refused before sending anything: the full corpus is predicted not to fit.\n"
            + "\n".join(f"  {p}" for p in problems)
            + "\n"
            + prediction.text()
            + "\nFree memory or disk (or use a bigger machine); to run anyway, add --ignore-preflight "
            "(recorded in the result): " + bench_command("first-stage", "keyword-full", "--ignore-preflight")
        )
    return {**prediction.record(), "ignored": bool(ignore), "refused": False}
