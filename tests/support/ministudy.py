"""A miniature study for tests/runbook: hub snapshots exactly as ``bench data fetch`` leaves them, tiny
models exactly as ``bench models fetch`` leaves them, offline-built proofs as ``bench timestamps stamp``
leaves them. Sizes: ``tests.support.minibench.SIZES`` (the launcher sets the same numbers on bench.core.plan).

Texts come from the tiny models' vocabulary (``tests.support.tiny_models.WORDS``) so that every word is a
known token and scores differ between passages.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path

from tests.support.minibench import SIZES, TEST_B_QUERIES

WORDS = (
    "berlin ist die hauptstadt von deutschland hamburg liegt im norden münchen bayern fluss rhein elbe "
    "wie viele einwohner hat stadt wo was wer wann katze hund haus garten auto zug bahn see berg wald"
).split()
N_71K = SIZES["CORPUS_71K_PASSAGES"]
N_FULL = SIZES["CORPUS_FULL_PASSAGES"]
SHARDS = 32


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def docid(i: int) -> str:
    return f"{1000 + i // 5}#{i % 5}"


def passages() -> list[dict[str, str]]:
    """The full corpus (N_FULL passages); the first N_71K are the 71k corpus."""
    rng = random.Random(20261201)
    return [
        {"docid": docid(i), "title": rng.choice(WORDS).capitalize(), "text": sentence(rng, 4, 12)}
        for i in range(N_FULL)
    ]


def dev_queries() -> dict[str, str]:
    rng = random.Random(7)
    return {str(100 + i): sentence(rng, 3, 5) + "?" for i in range(SIZES["DEV_QUERIES"])}


def dev_qrels(queries: dict[str, str]) -> list[tuple[str, str, int]]:
    """3 judgments per query (12), 5 of them relevant (the draw spends at most DEV_RELEVANT), all on 71k
    passages."""
    rng = random.Random(11)
    out = []
    relevant_left = SIZES["DEV_RELEVANT"]
    for n, qid in enumerate(sorted(queries)):
        docs = rng.sample(range(N_71K), 3)
        for j, d in enumerate(docs):
            rel = 1 if j == 0 or (j == 1 and relevant_left > len(queries) - n) else 0
            relevant_left -= rel
            out.append((qid, docid(d), rel))
    return out


def _parquet(path: Path, rows: list[dict[str, object]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def write_hub(hub: Path) -> dict[str, Path]:
    """Every pinned dataset in the layout ``bench.integrity.hub`` expects, under ``hub``."""
    from bench.core import plan
    from bench.data import hub as layout
    from bench.data import miracl

    corpus = passages()
    queries = dev_queries()
    qrels = dev_qrels(queries)
    # miracl: dev topics and qrels, test-B topics (no qrels)
    m = hub / f"{plan.MIRACL.repo}@{plan.MIRACL.revision}"
    topics = m / miracl.topics_relpath("de", "dev")
    topics.parent.mkdir(parents=True, exist_ok=True)
    topics.write_text("".join(f"{q}\t{t}\n" for q, t in queries.items()), encoding="utf-8")
    qrels_path = m / miracl.qrels_relpath("de", "dev")
    qrels_path.parent.mkdir(parents=True, exist_ok=True)
    qrels_path.write_text("".join(f"{q}\tQ0\t{d}\t{r}\n" for q, d, r in qrels), encoding="utf-8")
    rng = random.Random(3)
    test_b = m / miracl.topics_relpath("de", miracl.TEST_B_SPLIT)
    test_b.write_text(
        "".join(f"{9000 + i}\t{sentence(rng, 3, 5)}?\n" for i in range(TEST_B_QUERIES)), encoding="utf-8"
    )
    # corpus-71k (MTEB layout, `_id`), plus the queries / qrels files it ships (locked, not read)
    c = hub / f"{plan.CORPUS_71K.repo}@{plan.CORPUS_71K.revision}"
    _parquet(
        c / layout.CORPUS_71K_FILE,
        [{"_id": p["docid"], "title": p["title"], "text": p["text"]} for p in corpus[:N_71K]],
    )
    _parquet(
        c / "de-queries" / "dev-00000-of-00001.parquet", [{"_id": q, "text": t} for q, t in queries.items()]
    )
    _parquet(
        c / "de-qrels" / "dev-00000-of-00001.parquet",
        [{"query-id": q, "corpus-id": d, "score": r} for q, d, r in qrels],
    )
    # corpus-full: 32 gzip JSON-lines shards, N_FULL // 32 passages each
    f = hub / f"{plan.CORPUS_FULL.repo}@{plan.CORPUS_FULL.revision}" / layout.CORPUS_FULL_DIR
    f.mkdir(parents=True, exist_ok=True)
    per = N_FULL // SHARDS
    for n in range(SHARDS):
        with gzip.open(f / f"docs-{n}.jsonl.gz", "wt", encoding="utf-8") as fh:
            for p in corpus[n * per : (n + 1) * per]:
                fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    write_reranking(hub)
    return {"qrels": qrels_path, "topics": topics}


def write_reranking(hub: Path, n_q: int = 4, n_c: int = 100) -> None:
    """MIRACLReranking (de) parquet files and the mmteb id map (gzip JSON lines, candidates in BM25 order)."""
    import pyarrow  # noqa: F401  (fail early with the import's own message)

    from bench.core import plan

    snap = hub / f"{plan.RERANKING.repo}@{plan.RERANKING.revision}"
    id_map = (
        hub / f"{plan.RERANKING_ID_MAP.repo}@{plan.RERANKING_ID_MAP.revision}" / plan.RERANKING_ID_MAP_PATH
    )
    id_map.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(5)
    queries, corpus, top, lines, qrels = [], [], [], [], []
    for i in range(n_q):
        qid, text = f"dev_query{i}", sentence(rng, 3, 5) + "?"
        queries.append({"_id": qid, "text": text})
        cands = []
        for j in range(n_c):
            passage = sentence(rng, 4, 12)
            corpus.append({"_id": f"candidate_{qid}_{j:05d}", "title": "", "text": passage})
            cands.append({"docid": f"{90000 + i}#{j}", "title": "", "text": passage})
        top.append({"query-id": qid, "corpus-ids": [f"candidate_{qid}_{j:05d}" for j in range(n_c)]})
        qrels.append({"query-id": qid, "corpus-id": f"candidate_{qid}_00000", "score": 1})
        lines.append(json.dumps({"query_id": str(7000 + i), "query": text, "candidates": cands}))
    for part, rows in (("queries", queries), ("corpus", corpus), ("top_ranked", top), ("qrels", qrels)):
        _parquet(snap / f"de-{part}" / "dev-00000-of-00001.parquet", rows)  # type: ignore[arg-type]
    with gzip.open(id_map, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def write_proof(data: bytes, path: Path) -> None:
    """A detached OpenTimestamps proof of ``data`` with one pending calendar attestation, shaped as the
    `ots` client writes it (what `bench timestamps stamp` leaves before the Bitcoin attestation)."""
    from opentimestamps.core.notary import PendingAttestation
    from opentimestamps.core.op import OpAppend, OpSHA256
    from opentimestamps.core.serialize import BytesSerializationContext
    from opentimestamps.core.timestamp import DetachedTimestampFile, Timestamp

    ts = Timestamp(hashlib.sha256(data).digest())
    tip = ts.ops.add(OpAppend(b"\x07" * 16)).ops.add(OpSHA256())
    tip.attestations.add(PendingAttestation("https://alice.btc.calendar.opentimestamps.org"))
    ctx = BytesSerializationContext()
    DetachedTimestampFile(OpSHA256(), ts).serialize(ctx)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(ctx.getbytes()))
