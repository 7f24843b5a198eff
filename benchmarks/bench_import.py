"""Import throughput and importer memory (plan section "First stages").

1. 71,277 synthetic passages with 1024-dim vectors into the local Typesense 0.24.1: docs/s for several
   batch sizes (on the first 10,000 documents each), then the whole corpus with the fastest batch size.
2. Peak RSS of the importer process (streaming ``docs-<N>.jsonl.gz`` shards through
   ``bench.data.hub.iter_corpus_full`` and ``bench.firststage.importer``) for 100k and 1M passages;
   the importer must stay flat (< 300 MB at both sizes).

Run: ``uv run python benchmarks/bench_import.py [--skip-vectors] [--skip-rss] [--rss-sizes 100000,1000000]``.
Prints figures; writes nothing into the repository.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_import_common import passages, vectors, write_shards

from bench.core.plan import CORPUS_71K_PASSAGES, EMBEDDING_DIMS
from bench.data import Passage
from bench.firststage.importer import import_passages, text_doc
from bench.firststage.server import TypesenseServer, local_typesense

_RSS_CHILD = """
import sys, time
from pathlib import Path
from bench.data.hub import iter_corpus_full
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.importer import import_passages
from bench.firststage.server import TypesenseServer
url, key, snap, ck, n = sys.argv[1:6]
server = TypesenseServer(url, key)
t0 = time.perf_counter()
rec = import_passages(server, STAGE_DEFS["keyword-plain-71k"].schema(), iter_corpus_full(Path(snap)),
                      checkpoint=Path(ck), expected=int(n), batch_size=1000, label="rss import")
dt = time.perf_counter() - t0
# VmHWM, not ru_maxrss: after fork+exec Linux carries the parent's ru_maxrss over into the child
hwm = [ln for ln in Path("/proc/self/status").read_text().splitlines() if ln.startswith("VmHWM:")][0]
print(f"RESULT {rec.documents} {dt:.1f} {int(hwm.split()[1]) / 1024:.1f}")
"""


def vector_import(
    server: TypesenseServer, docs: list[Passage], vecs: np.ndarray, batch: int, name: str
) -> float:
    schema = {
        "name": name,
        "fields": [
            {"name": "title", "type": "string"},
            {"name": "text", "type": "string"},
            {"name": "embedding", "type": "float[]", "num_dim": EMBEDDING_DIMS},
        ],
    }

    def build(b: list[Passage], start: int) -> list[dict]:  # type: ignore[type-arg]
        return [{**text_doc(p), "embedding": vecs[start + i].tolist()} for i, p in enumerate(b)]

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        import_passages(
            server,
            schema,
            docs,
            checkpoint=Path(tmp) / "c.json",
            expected=len(docs),
            batch_size=batch,
            build=build,
            label=f"import batch {batch}",
        )
        return len(docs) / (time.perf_counter() - t0)


def bench_vectors(batches: list[int], probe: int) -> None:
    docs = list(passages(CORPUS_71K_PASSAGES))
    vecs = vectors(len(docs))
    rates = {}
    with local_typesense() as server:
        for b in batches:
            rates[b] = vector_import(server, docs[:probe], vecs, b, f"probe-{b}")
            print(f"batch {b:5d}: {rates[b]:8.1f} docs/s ({probe} docs, 1024-dim vectors)", flush=True)
        best = max(rates, key=rates.__getitem__)
        rate = vector_import(server, docs, vecs, best, "all")
        print(
            f"chosen batch size {best}: {len(docs)} docs in {len(docs) / rate:.1f} s = {rate:.1f} docs/s",
            flush=True,
        )


def bench_rss(sizes: list[int]) -> None:
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp, local_typesense() as server:
            snap = Path(tmp) / "snap"
            t0 = time.perf_counter()
            write_shards(snap / "miracl-corpus-v1.0-de", n)
            print(f"{n} passages: shards written in {time.perf_counter() - t0:.1f} s", flush=True)
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _RSS_CHILD,
                    server.url,
                    server.api_key,
                    str(snap),
                    str(Path(tmp) / "ck.json"),
                    str(n),
                ],
                capture_output=True,
                text=True,
            )
            line = [x for x in out.stdout.splitlines() if x.startswith("RESULT")]
            if out.returncode != 0 or not line:
                print(out.stderr[-2000:])
                raise SystemExit(f"importer failed for {n}")
            docs, secs, rss = line[0].split()[1:]
            print(
                f"{n} passages streamed: {docs} imported in {secs} s "
                f"({int(docs) / float(secs):.0f} docs/s), importer peak RSS {rss} MB",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-vectors", action="store_true")
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--batches", default="100,250,500,1000,2000")
    ap.add_argument("--probe", type=int, default=10_000)
    ap.add_argument("--rss-sizes", default="100000,1000000")
    a = ap.parse_args()
    if not a.skip_vectors:
        bench_vectors([int(x) for x in a.batches.split(",")], a.probe)
    if not a.skip_rss:
        bench_rss([int(x) for x in a.rss_sizes.split(",")])


if __name__ == "__main__":
    main()
