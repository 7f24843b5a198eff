"""Tiny random models in the hub cache layout and small check inputs, built offline (no hub, no GPU).

- ``tiny_models["bge-v2-m3"]``: a BERT sequence-classification cross-encoder at
  ``models--BAAI--bge-reranker-v2-m3/snapshots/<pinned revision>`` (what the bge adapter loads).
- ``tiny_models["qwen3-0.6b"]``: a Qwen3 causal LM with a word-level tokenizer that knows "yes"/"no" and the
  chat template words, at ``models--Qwen--Qwen3-Reranker-0.6B/snapshots/<pinned revision>``.
Both are built by ``tests.support.tiny_models`` (the one builder module) with this folder's vocabulary.
Weights use a large initialiser range, so the scores depend strongly on every input token: a wrong input
format changes the ranking instead of hiding in a nearly constant score.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.core.plan import QWEN3_INSTRUCTION
from bench.equality.data import EqualityQuery
from tests.equality.reference_sync import sync_reference_env
from tests.support.heap import freeze_long_lived
from tests.support.pyforks import Interpreters
from tests.support.tiny_models import build_bert, build_qwen, tiny_snapshot, word_level_tokenizer

WORDS = (
    "wer was wann wo wie warum ist war hat die der das ein eine und oder in im am von zu mit "
    "berlin hamburg köln rhein elbe stadt fluss land hauptstadt einwohner jahr gegründet liegt "
    "deutschland europa musik kunst geschichte kaiser könig krieg frieden schule sprache deutsch"
).split()


def passages_for(seed: int, n: int, long: bool = False) -> list[str]:
    import random

    rng = random.Random(seed)
    lo, hi = (40, 70) if long else (3, 14)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


def make_queries(n_queries: int = 3, n_passages: int = 12, *, long: bool = False) -> list[EqualityQuery]:
    import random

    out = []
    for i in range(n_queries):
        rng = random.Random(1000 + i)
        query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))) + "?"
        passages = passages_for(i, n_passages, long)
        docids = tuple(f"{100 + i}#{j}" for j in range(n_passages))
        out.append(EqualityQuery(f"q{i}", query, docids, tuple(passages), f"dev_query{i}", docids))
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """The equality runner collects garbage before each reference loads the model (``_release_memory``): the
    process's long-lived objects are frozen first, as in tests/quality (tests/support/heap.py), so each
    collection looks at what the test made."""
    freeze_long_lived()


@pytest.fixture(scope="session")
def queries_factory():  # type: ignore[no-untyped-def]
    """``queries_factory(n_queries, n_passages, long=False)`` -> deterministic EqualityQuery list."""
    return make_queries


def _vocab(extra_text: str) -> list[str]:
    tokens = set(WORDS) | set(re.findall(r"\w+|[^\w\s]+", extra_text.lower() + " " + extra_text))
    return sorted(tokens)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from bench.rerankers.decoder import QWEN3_PREFIX, QWEN3_SUFFIX

    root = tmp_path_factory.mktemp("models")
    # --- BERT cross-encoder (bge layout) ---
    bert_dir = build_bert(
        tiny_snapshot("bge-v2-m3", root),
        words=_vocab("? ä ö ü ß"),
        model_max_length=None,
        seed=0,
        heads=4,
        max_positions=512,
        initializer_range=0.5,
    )
    # --- Qwen3 causal LM (Qwen3-Reranker layout); its weights follow the BERT's in one random stream ---
    qwords = ["<unk>", "<|endoftext|>", *(w for w in _vocab(QWEN3_PREFIX + QWEN3_SUFFIX + QWEN3_INSTRUCTION))]
    qwords += [w for w in ("yes", "no", "<", ">:", ":", "?") if w not in qwords]
    qwen_dir = build_qwen(
        tiny_snapshot("qwen3-0.6b", root),
        word_level_tokenizer(qwords),
        seed=None,
        heads=4,
        kv_heads=2,
        head_dim=8,
        max_positions=1024,
        initializer_range=0.5,
    )
    return {"bge-v2-m3": bert_dir, "qwen3-0.6b": qwen_dir, "root": root}


@pytest.fixture(scope="session")
def tiny_mxbai(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Qwen2 causal LM (mxbai-rerank-v2 is Qwen2-based) with a word-level tokenizer that knows "1"/"0" and
    the vendor's prompt words, at ``models--mixedbread-ai--mxbai-rerank-large-v2/snapshots/<revision>``."""
    from bench.rerankers.decoder import MXBAI_PREFIX, MXBAI_SUFFIX, MXBAI_TASK

    words = [
        "<unk>",
        "<|endoftext|>",
        *_vocab(MXBAI_PREFIX + MXBAI_SUFFIX + MXBAI_TASK + " query: document: 1 0 ?"),
    ]
    path = tiny_snapshot("mxbai-large-v2", tmp_path_factory.mktemp("mxbai"))
    return build_qwen(
        path,
        word_level_tokenizer(words),
        family="qwen2",
        seed=1,
        heads=4,
        kv_heads=2,
        head_dim=None,
        initializer_range=0.5,
        portable=True,
    )


def write_reranking_snapshot(hub: Path, n_q: int = 22, n_c: int = 100) -> tuple[Path, Path]:
    """MIRACLReranking (de) parquet files and the mmteb id map (gzip JSON lines, candidates in BM25 order,
    the position that the ids ``candidate_<qid>_<position>`` carry) under ``hub`` where
    ``bench.integrity.hub.snapshot_dir`` looks; texts from the tiny vocabulary."""
    import gzip
    import json
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.core import plan

    snap = hub / f"{plan.RERANKING.repo}@{plan.RERANKING.revision}"
    id_map = (
        hub / f"{plan.RERANKING_ID_MAP.repo}@{plan.RERANKING_ID_MAP.revision}" / plan.RERANKING_ID_MAP_PATH
    )
    id_map.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    queries, corpus, top, lines = [], [], [], []
    for i in range(n_q):
        qid, text = f"dev_query{i}", " ".join(rng.choice(WORDS) for _ in range(4)) + "?"
        queries.append({"_id": qid, "text": text})
        cands = []
        for j, passage in enumerate(passages_for(500 + i, n_c)):
            corpus.append({"_id": f"candidate_{qid}_{j:05d}", "title": "", "text": passage})
            cands.append({"docid": f"{90000 + i}#{j}", "title": "", "text": passage})
        top.append({"query-id": qid, "corpus-ids": [f"candidate_{qid}_{j:05d}" for j in range(n_c)]})
        lines.append(json.dumps({"query_id": str(7000 + i), "query": text, "candidates": cands}))
    for part, rows in (("queries", queries), ("corpus", corpus), ("top_ranked", top)):
        (snap / f"de-{part}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), snap / f"de-{part}" / "dev-00000-of-00001.parquet")
    with gzip.open(id_map, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return snap, id_map


@pytest.fixture(scope="session")
def tf457_python() -> Path:
    return sync_reference_env("tf457")


@pytest.fixture(scope="session")
def mxbai_python() -> Path:
    return sync_reference_env("mxbai")


@pytest.fixture
def reranking_hub(tmp_path: Path) -> Path:
    """A hub folder holding the check-1 input files (22 queries x 100 candidates) in the pinned layout."""
    hub = tmp_path / "hub"
    write_reranking_snapshot(hub)
    return hub


# Forked reference processes (tests.support.pyforks): a test that needs a reference environment's scores but
# not a fresh interpreter start asks for ``forked_main`` / ``forked_tf457`` / ``forked_mxbai``; the
# environment's ``BENCH_REFERENCE_PYTHON_<ENV>`` then names a stand-in whose runs fork from one server per
# environment and test process (torch and transformers imported once, ~5 s each start otherwise). Each run
# is still its own process of that environment's interpreter (its argv, environment, streams, exit status).
# BENCH_EQUALITY_FORKS=0 runs them in fresh interpreters instead (development: the same tests, no servers).
# Figures (2026-12-06, tests/equality with -n 0 and OMP_NUM_THREADS=1 as under xdist, shared 2-core machine at
# load 3-4, back to back): 118 s wall, 86 s CPU, 113 s of test durations with BENCH_EQUALITY_FORKS=0; 55 s
# wall, 43 s CPU (the 3 servers' 22 s included), 48 s of test durations with the servers.
# What each server imports before it forks: torch and transformers (bench.doctor.checks.REFERENCE_MODULES),
# and transformers' lazily imported model and tokenizer modules that the references load the tiny models
# with (BERT, Qwen2, Qwen3; another 4.4 s CPU under transformers 5, 1.6 s under 4.57, 2026-12-06).
TRANSFORMERS_MODULES = (
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
    "transformers.models.bert.modeling_bert",
    "transformers.models.qwen2.modeling_qwen2",
    "transformers.models.qwen3.modeling_qwen3",
)
REFERENCE_PRELOAD = {
    "main": TRANSFORMERS_MODULES,
    "tf457": TRANSFORMERS_MODULES,
    "mxbai": (*TRANSFORMERS_MODULES, "mxbai_rerank"),
}


class ReferenceServers:
    """The stand-ins of one test process, and the modules cache every forked run shares: transformers
    reads ``HF_MODULES_CACHE`` when the server imports it, so it is the same for every run (a folder of
    this test session, so remote code is this session's fakes, never an older copy from the machine's)."""

    def __init__(self, modules: Path) -> None:
        self.interpreters = Interpreters()
        self.modules = modules
        self.stand_ins: dict[str, Path] = {}

    def use(self, monkeypatch: pytest.MonkeyPatch, env: str, python: Path) -> Path:
        monkeypatch.setenv("HF_MODULES_CACHE", str(self.modules))
        # one intra-op thread in the references (as tests/runbook): their ops on the tiny models take
        # microseconds, and on the shared 2-core machine a second thread makes every op wait at its barrier
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        if os.environ.get("BENCH_EQUALITY_FORKS") == "0":  # development: fresh interpreters, as in production
            return python
        if env not in self.stand_ins:
            # PYTEST_CURRENT_TEST names each test: runs differing only in it share the server
            self.stand_ins[env] = Path(
                self.interpreters.wrapper(env, python, REFERENCE_PRELOAD[env], key_ignore=("PYTEST_",))
            )
        monkeypatch.setenv(f"BENCH_REFERENCE_PYTHON_{env.upper()}", str(self.stand_ins[env]))
        return self.stand_ins[env]


@pytest.fixture(scope="session")
def reference_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceServers]:
    servers = ReferenceServers(tmp_path_factory.mktemp("hf-modules"))
    try:
        yield servers
    finally:
        started = len(servers.interpreters._pids())
        servers.interpreters.close()
        print(
            f"equality: {started} reference servers took {servers.interpreters.cpu_s:.1f} s CPU",
            file=sys.stderr,
        )


@pytest.fixture
def forked_main(reference_servers: ReferenceServers, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The main environment's references fork from a server (``BENCH_REFERENCE_PYTHON_MAIN``)."""
    return reference_servers.use(monkeypatch, "main", Path(sys.executable))


@pytest.fixture
def forked_tf457(
    reference_servers: ReferenceServers, tf457_python: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """references/tf457's references fork from a server (``BENCH_REFERENCE_PYTHON_TF457``)."""
    return reference_servers.use(monkeypatch, "tf457", tf457_python)


@pytest.fixture
def forked_mxbai(
    reference_servers: ReferenceServers, mxbai_python: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """references/mxbai's references fork from a server (``BENCH_REFERENCE_PYTHON_MXBAI``)."""
    return reference_servers.use(monkeypatch, "mxbai", mxbai_python)
