"""First-stage query latency on the local Typesense 0.24.1 (plan section "Latency": "First stage: Typesense
query time"; here only as an engineering figure, the study measures on its desktop with 30.2).

- keyword: the plain keyword stage (the German stage needs 26.0) on the bundled real German sample
  (7,402 passages), the 305 dev queries;
- vector: 71,277 synthetic documents with random 1024-dim vectors (the size of the 71k corpus),
  305 random query vectors, k = 100.
Prints server-reported ``search_time_ms`` and client wall time (p50, p95) per stage, after 20 warm-up
queries. Run: ``uv run python benchmarks/bench_query_latency.py [--vector-docs N]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_import_common import passages, vectors

from bench.core.plan import CORPUS_71K_PASSAGES, EMBEDDING_DIMS, WARMUP_CALLS
from bench.data.bundled import load_sample
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.importer import import_passages
from bench.firststage.queries import Timings, request_params
from bench.firststage.search import search
from bench.firststage.server import TypesenseServer, local_typesense


def measure(server: TypesenseServer, collection: str, params: list[dict]) -> Timings:  # type: ignore[type-arg]
    for p in params[:WARMUP_CALLS]:
        search(server, collection, p)
    t = Timings()
    for p in params:
        r = search(server, collection, p)
        t.server_ms.append(r.server_ms)
        t.client_ms.append(r.client_ms)
    return t


def show(label: str, t: Timings) -> None:
    r = t.record()
    s, c = r["server_search_time_ms"], r["client_wall_ms"]
    print(
        f"{label}: {r['queries']} queries; server p50 {s['p50']:.1f} ms, p95 {s['p95']:.1f} ms; "
        f"client p50 {c['p50']:.1f} ms, p95 {c['p95']:.1f} ms",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vector-docs", type=int, default=CORPUS_71K_PASSAGES)
    ap.add_argument("--skip-vector", action="store_true")
    a = ap.parse_args()
    sample = load_sample()
    queries = list(sample.queries.values())
    with local_typesense() as server, tempfile.TemporaryDirectory() as tmp:
        plain = STAGE_DEFS["keyword-plain-71k"]
        import_passages(server, plain.schema(), sample.corpus, checkpoint=Path(tmp) / "k.json")
        show(
            "keyword-plain (7,402 real passages)",
            measure(server, plain.collection, [request_params(plain, q, None, None) for q in queries]),
        )
        if a.skip_vector:
            return
        vec = STAGE_DEFS["vector-71k"]
        docs = vectors(a.vector_docs)

        def build(batch, start):  # type: ignore[no-untyped-def]
            return [{"id": p.docid, "embedding": docs[start + i].tolist()} for i, p in enumerate(batch)]

        import_passages(
            server,
            vec.schema(EMBEDDING_DIMS),
            passages(a.vector_docs, words=1),
            checkpoint=Path(tmp) / "v.json",
            batch_size=500,
            build=build,
        )
        qv = vectors(len(queries), seed=7)
        show(
            f"vector k=100 ({a.vector_docs} docs, 1024 dims)",
            measure(server, vec.collection, [request_params(vec, "", v, None) for v in qv]),
        )


if __name__ == "__main__":
    main()
