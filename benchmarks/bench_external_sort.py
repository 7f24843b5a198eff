"""The external sort of the full corpus's import order at scale: time, peak memory and
peak disk of ``bench.data.order.external_sort`` against N, and the preflight's disk prediction beside it.

Per N of ``--sizes``: N generated German passages (``scale_corpus``, the scale benchmark's generator) are
written as ``--shards`` MIRACL-format shards (gzip level 6), each in id order, and the shards are read in
reverse order: every shard boundary is out of order, as when a hub revision renumbers its files. The sort
runs in a fresh child process, so its peak resident memory (``VmHWM``) is the sort's own. Peak disk is
the largest total size of the build folder (runs plus the merged file), polled every 0.2 s; the merged
file's size is S. The preflight's prediction of S and of the peak (``bench.firststage.preflight``, from the
shards' gzip bytes) is printed beside the measured ones. The output is checked: N passages in ascending id
order, the same ids as the input.

Run: ``nice -n 19 uv run python benchmarks/bench_external_sort.py --sizes 100000,300000 --run-size 50000``.
Figures taken on the shared 2-core development machine are loaded-machine figures (load in each row).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def write_shards(n: int, k: int, folder: Path) -> list[Path]:
    from scale_corpus import corpus

    folder.mkdir(parents=True)
    per = -(-n // k)
    paths, fh, written = [], None, 0
    for i, p in enumerate(corpus(n)):
        if i % per == 0:
            if fh is not None:
                fh.close()
            paths.append(folder / f"docs-{len(paths)}.jsonl.gz")
            fh = gzip.open(paths[-1], "wb", compresslevel=6)
        line = {"docid": p.docid, "title": p.title, "text": p.text}
        assert fh is not None
        fh.write((json.dumps(line, ensure_ascii=False) + "\n").encode())
        written += 1
    if fh is not None:
        fh.close()
    assert written == n
    return paths


def _vm(key: str) -> int:
    """``VmHWM`` (peak resident memory) of this process in bytes. Not ``ru_maxrss``: Linux keeps that
    across ``execve``, so a child would report its parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {key}")


def child(argv: list[str]) -> int:
    """``bench_external_sort.py --child OUT RUN_SIZE SHARD...``: sort, print the manifest and wall time."""
    from bench.data.hub import iter_jsonl_gz
    from bench.data.order import external_sort

    out, run_size, shards = Path(argv[0]), int(argv[1]), [Path(x) for x in argv[2:]]
    rss0 = _vm("VmHWM")
    t0 = time.perf_counter()
    m = external_sort((p for s in shards for p in iter_jsonl_gz(s)), out, run_size=run_size)
    secs = time.perf_counter() - t0
    peak = _vm("VmHWM")
    print(json.dumps({"manifest": m, "seconds": secs, "rss_before": rss0, "rss_peak": peak}), flush=True)
    return 0


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            try:
                total += os.stat(os.path.join(dirpath, f)).st_size
            except FileNotFoundError:
                pass
    return total


def measure(n: int, k: int, run_size: int, base: Path) -> dict[str, Any]:
    from bench.data import docid_key
    from bench.data.hub import iter_jsonl_gz
    from bench.data.order import SORTED_FILE
    from bench.firststage import preflight as pf

    row: dict[str, Any] = {"n": n, "shards": k, "run_size": run_size, "load_before": _load()}
    t0 = time.perf_counter()
    shards = write_shards(n, k, base / "in")
    row["write_shards_seconds"] = round(time.perf_counter() - t0, 1)
    shard_bytes = sum(s.stat().st_size for s in shards)
    _per, ratio = pf._sample_sorted_ratio()
    row["shard_gzip_bytes"] = shard_bytes
    row["predicted_sorted_bytes"] = shard_bytes * ratio
    row["predicted_peak_bytes"] = 2 * shard_bytes * ratio
    out = base / "sorted"
    peak = [0]
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_bytes(base) - shard_bytes)
            stop.wait(0.2)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(out), str(run_size)]
    res = subprocess.run([*cmd, *map(str, reversed(shards))], capture_output=True, text=True, check=False)
    stop.set()
    watcher.join()
    if res.returncode != 0:
        raise SystemExit(f"the sort failed: {res.stderr[-2000:]}")
    rec = json.loads(res.stdout.strip().splitlines()[-1])
    row.update(
        sort_seconds=round(rec["seconds"], 1),
        runs=rec["manifest"]["runs"],
        child_rss_before_sort_bytes=rec["rss_before"],  # the interpreter and its imports
        sort_peak_rss_bytes=rec["rss_peak"],  # the child's own VmHWM
        measured_peak_disk_bytes=peak[0],
        measured_sorted_bytes=(out / SORTED_FILE).stat().st_size,
        load_after=_load(),
    )
    prev = None
    count = 0
    for p in iter_jsonl_gz(out / SORTED_FILE):
        key = docid_key(p.docid)
        if prev is not None and key <= prev:
            raise SystemExit(f"sorted output not ascending at {p.docid}")
        prev, count = key, count + 1
    if count != n:
        raise SystemExit(f"sorted output has {count} passages, expected {n}")
    row["output_checked"] = f"{count:,} passages, ascending ids"
    return row


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2:]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,300000")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--run-size", type=int, default=50_000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="append each row to this JSONL file")
    a = ap.parse_args()
    mib = 2**20
    for n in [int(x) for x in a.sizes.split(",")]:
        with tempfile.TemporaryDirectory(dir=a.workdir, prefix="bench-sort-") as tmp:
            row = measure(n, a.shards, a.run_size, Path(tmp))
        row["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        row["nice"] = os.nice(0)
        print(
            f"N={n:,} ({row['runs']} runs of {a.run_size:,}): sort {row['sort_seconds']:,.1f} s, "
            f"peak RSS {row['sort_peak_rss_bytes'] / mib:,.0f} MiB "
            f"({row['child_rss_before_sort_bytes'] / mib:,.0f} before the sort); sorted copy S "
            f"{row['measured_sorted_bytes'] / mib:,.1f} MiB "
            f"(predicted {row['predicted_sorted_bytes'] / mib:,.1f}), "
            f"peak disk {row['measured_peak_disk_bytes'] / mib:,.1f} MiB "
            f"(predicted {row['predicted_peak_bytes'] / mib:,.1f}); load {row['load_before'][0]} -> "
            f"{row['load_after'][0]}",
            flush=True,
        )
        print(json.dumps(row), flush=True)
        if a.out is not None:
            with a.out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
