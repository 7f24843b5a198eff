"""``import_passages`` side by side with its anchor, in one run.

10,000 synthetic German-like passages with random L2-normalised 1024-dim float32 vectors, batch 1,000, into
the local Typesense 0.24.1 (one server, a fresh collection per import):

- anchor: the same documents pre-serialised as JSONL (the former ``json.dumps`` bodies, built before the
  clock starts) and posted as they are with the importer's own HTTP client (``TypesenseServer.raw``);
- ``import_passages`` as the vector stages call it now (float64 rows per batch, orjson bodies; serialisation
  included in the time);
- ``import_passages`` with the former body builder (``json.dumps`` of ``.tolist()`` floats), for reference.

Rounds alternate the order of the three; the best docs/s of each is printed (the machine is shared: the
load average is printed next to the figures). Target: import_passages >= 0.9x the anchor.

    uv run python benchmarks/bench_speed_import.py [--docs 10000] [--batch 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_import_common import passages, vectors

import bench.firststage.collection as collection
from bench.core.plan import EMBEDDING_DIMS
from bench.data import Passage
from bench.firststage.importer import import_passages, text_doc
from bench.firststage.server import TypesenseServer, local_typesense

TARGET = 0.9


def _schema(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "fields": [
            {"name": "title", "type": "string"},
            {"name": "text", "type": "string"},
            {"name": "embedding", "type": "float[]", "num_dim": EMBEDDING_DIMS},
        ],
    }


def _former_body(docs: Sequence[Mapping[str, Any]]) -> bytes:
    return "\n".join(json.dumps(d, ensure_ascii=False, separators=(",", ":")) for d in docs).encode("utf-8")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def raw_post(server: TypesenseServer, docs: list[Passage], vecs: np.ndarray, batch: int, name: str) -> float:
    bodies = [
        _former_body(
            [{**text_doc(p), "embedding": vecs[s + i].tolist()} for i, p in enumerate(docs[s : s + batch])]
        )
        for s in range(0, len(docs), batch)
    ]
    server.request("POST", "/collections", json=_schema(name))
    t0 = time.perf_counter()
    for body in bodies:
        resp = server.raw(
            "POST",
            f"/collections/{name}/documents/import",
            params={"action": "upsert"},
            content=body,
            headers={"Content-Type": "text/plain"},
        )
        if resp.status_code != 200 or b'"success":false' in resp.content:
            raise SystemExit(f"raw post failed: {resp.status_code} {resp.text[:200]}")
    rate = len(docs) / (time.perf_counter() - t0)
    server.request("DELETE", f"/collections/{name}")
    return rate


def via_importer(
    server: TypesenseServer,
    docs: list[Passage],
    vecs: np.ndarray,
    batch: int,
    name: str,
    *,
    former: bool,
) -> float:
    def build_now(b: list[Passage], start: int) -> list[dict[str, Any]]:
        rows = np.ascontiguousarray(
            vecs[start : start + len(b)], dtype=np.float64
        )  # as bench.firststage.stages
        return [{**text_doc(p), "embedding": row} for row, p in zip(rows, b, strict=True)]

    def build_former(b: list[Passage], start: int) -> list[dict[str, Any]]:
        return [{**text_doc(p), "embedding": vecs[start + i].tolist()} for i, p in enumerate(b)]

    body: Callable[[Sequence[Mapping[str, Any]]], bytes] = collection.import_body
    if former:
        collection.import_body = _former_body  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            import_passages(
                server,
                _schema(name),
                docs,
                checkpoint=Path(tmp) / "c.json",
                expected=len(docs),
                batch_size=batch,
                build=build_former if former else build_now,
                label=name,
            )
            rate = len(docs) / (time.perf_counter() - t0)
    finally:
        collection.import_body = body  # type: ignore[assignment]
    server.request("DELETE", f"/collections/{name}")
    return rate


def serialisation_cpu_ms(docs: list[Passage], vecs: np.ndarray, batch: int) -> dict[str, float]:
    """CPU milliseconds of this process to build one batch's body, the former way and now (a profile of
    the import's own share, little disturbed by other jobs on the machine)."""
    part, rows = docs[:batch], vecs[:batch]

    def former() -> bytes:
        return _former_body([{**text_doc(p), "embedding": rows[i].tolist()} for i, p in enumerate(part)])

    def now() -> bytes:
        r64 = np.ascontiguousarray(rows, dtype=np.float64)
        return collection.import_body(
            [{**text_doc(p), "embedding": r} for r, p in zip(r64, part, strict=True)]
        )

    out: dict[str, float] = {}
    for name, fn in (("json.dumps, before", former), ("orjson, now", now)) * 2:
        t = time.process_time()
        fn()
        ms = (time.process_time() - t) * 1000
        out[name] = min(out.get(name, ms), ms)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    docs = list(passages(a.docs))
    vecs = vectors(len(docs), EMBEDDING_DIMS)
    print(f"cpus: {os.cpu_count()}, load average before: {_load()}", flush=True)
    for name, ms in serialisation_cpu_ms(docs, vecs, a.batch).items():
        print(f"body of one {a.batch}-document batch ({name}): {ms:.0f} ms CPU", flush=True)
    best: dict[str, float] = {}
    runs: dict[str, Callable[[TypesenseServer, str], float]] = {
        "anchor: pre-serialised JSONL posted raw": lambda s, n: raw_post(s, docs, vecs, a.batch, n),
        "import_passages (orjson, now)": lambda s, n: via_importer(s, docs, vecs, a.batch, n, former=False),
        "import_passages (json.dumps, before)": lambda s, n: via_importer(
            s, docs, vecs, a.batch, n, former=True
        ),
    }
    with local_typesense() as server:
        order = list(runs)
        for r in range(a.rounds):
            for i, label in enumerate(order if r % 2 == 0 else order[::-1]):
                rate = runs[label](server, f"speed-{r}-{i}")
                best[label] = max(best.get(label, 0.0), rate)
                print(f"round {r + 1}: {label:40s} {rate:8.1f} docs/s (load {_load()})", flush=True)
    anchor = best[order[0]]
    print(f"\n{a.docs} passages, {EMBEDDING_DIMS}-dim vectors, batch {a.batch}, best of {a.rounds} rounds")
    for label in order:
        print(f"  {label:40s} {best[label]:8.1f} docs/s  {best[label] / anchor:5.2f}x of the anchor")
    ok = best[order[1]] >= TARGET * anchor
    print(
        f"target import_passages >= {TARGET}x anchor: {'MET' if ok else 'MISSED'}; load average after: "
        f"{_load()}"
    )


if __name__ == "__main__":
    main()
