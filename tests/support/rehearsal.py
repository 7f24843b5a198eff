"""One shared ``bench rehearse`` run for the tests that assert on a rehearsal's outputs,
and the small BEIR-layout dataset it runs on.

``shared_rehearsal`` (the session fixture ``rehearsal`` in tests/conftest.py) runs ``bench rehearse`` once
per test session, as its own process: the transformers load report is printed once per model load in a
process, so only a fresh process shows whether it reaches the terminal (tests/rehearse/test_quiet.py), and
the rehearsal's memory goes with it. The dataset is the mini dataset without titles and with a query of stop
words only (the bad input). Tests read the run and never change it: a test that resumes or
interrupts a rehearsal works on a copy (``Rehearsal.copy_to``) or starts its own process with the run's
cache (``Rehearsal.env``: the embedding cache and the quantised int8 stand-in are then reused, so no
second quantisation happens in a session). The quantised stand-in lives in a per-checkout folder
(``INT8_CACHE``, linked into the session's cache), so a later session on the same checkout reuses it too.

Under pytest-xdist the run is made once for all workers: the first worker to ask makes it under a file
lock in the session's shared temporary folder and writes ``result.json``; the others read it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from bench.data.bundled import load_sample

ROOT = Path(__file__).resolve().parents[2]
N_QUERIES = 5  # write_mini_beir's default
N_OTHER = 20
# The rehearsals' queries: two real ones whose first three judged passages hold the first word the keyword
# stage keeps (its search drops query words from the right), so keyword-71k has candidates for both
SMALL_QUERIES = ("10216007#0", "11310397#0")
SMALL_JUDGED = 3  # judged passages per query
SMALL_OTHER = 2  # NoMIRACL passages
# Each passage cut to its first 12 words (the keyword stage's kept query word is still in them: "beliebtesten
# Sportarten", "höchste Berg der Anden"). Every call of the latency and int8 steps encodes the query and all
# candidates. A MiniLM call on the 8 passages, measured on the shared 2-core machine: 0.41 -> 0.10 CPU-s with
# one torch thread (as under xdist), 1.2 -> 0.3 with two; the run as a whole 31 -> 23 CPU-s
SMALL_WORDS = 12
# The shared run: those 2 queries (3 judged passages each), 2 NoMIRACL passages (all cut to SMALL_WORDS words)
# and the stop-word query. Its latency and int8 steps encode every candidate of each timed call (all 8
# passages at k = 20 and 100), so the corpus's size and its passages' length drive their time; no test of the
# run asserts on either.
SHARED_QUERIES = len(SMALL_QUERIES)
STOP_WORD_QUERY = ("stop-words-only", "Was ist das?")  # the keyword stage finds nothing for it
# The quantised int8 stand-in of the shared rehearsal and of the rehearsals that take its cache (``env``):
# kept per checkout, not per session, since its folder's cache key holds everything it is made from (the
# calibration set, configuration, package versions, input cut and the quantising code's bytes,
# bench.rehearse.int8.standin_key); a reused folder is verified on every use, and it is checked or made
# under a lock beside it (two sessions or xdist workers never quantise into it at once). The rest of the
# rehearsal's cache (the embeddings) stays per session.
INT8_CACHE = ROOT / ".cache" / "bench-tests" / "int8"
# Variables a rehearsal process must not inherit: with a key set, the judged step would call the API
UNSET = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")


def write_mini_beir(
    directory: Path,
    *,
    qrels: bool = True,
    titles: bool = True,
    bad_query: bool = False,
    n_queries: int = N_QUERIES,
    n_other: int = N_OTHER,
    n_judged: int | None = None,
    query_ids: tuple[str, ...] | None = None,
    max_words: int | None = None,
) -> Path:
    """``n_queries`` MIRACL-de dev queries (the first by id), their judged passages and ``n_other`` NoMIRACL
    passages (real German text) in BEIR layout; ``n_judged``: only each query's first that many judged
    passages (in the qrels' order, which lists the relevant ones first) and their qrels lines; ``query_ids``:
    these queries instead of the first ``n_queries``. ``titles=False``: a corpus without titles (no ``title``
    key); ``bad_query``: one more judged query made of stop words only, for which the keyword stage has no
    candidates; ``max_words``: each passage's text cut to its first that many words (real German text still;
    every stand-in call that encodes all candidates then costs a fraction)."""
    sample = load_sample()
    lines = [
        ln.split("\t") for ln in sample.qrels_path.read_text(encoding="utf-8").splitlines() if ln.strip()
    ]
    qids = sorted(query_ids) if query_ids is not None else sorted(sample.queries)[:n_queries]
    judged = [(q, d, r) for q, _, d, r in lines if q in qids]
    if n_judged is not None:
        judged = [row for q in qids for row in [j for j in judged if j[0] == q][:n_judged]]
    wanted = {d for _, d, _ in judged}
    passages = [p for p in sample.judged if p.docid in wanted] + sample.nomiracl[:n_other]
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for p in passages:
            text = p.text if max_words is None else " ".join(p.text.split()[:max_words])
            row = {"_id": p.docid, "text": text}
            if titles:
                row["title"] = p.title
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    with (directory / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for q in qids:
            fh.write(json.dumps({"_id": q, "text": sample.queries[q]}, ensure_ascii=False) + "\n")
        if bad_query:
            fh.write(json.dumps({"_id": STOP_WORD_QUERY[0], "text": STOP_WORD_QUERY[1]}) + "\n")
    if qrels:
        (directory / "qrels").mkdir(exist_ok=True)
        rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{r.strip()}" for q, d, r in judged]
        if bad_query:
            rows.append(f"{STOP_WORD_QUERY[0]}\t{judged[0][1]}\t1")
        (directory / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return directory


@dataclass(frozen=True)
class Rehearsal:
    """A finished ``bench rehearse`` run: its folder (read it, never change it), the dataset and cache it
    ran with, and what the process printed."""

    dir: Path
    dataset: Path
    cache: Path
    returncode: int
    stdout: str
    stderr: str
    # the int8 stand-in folders in the persistent test cache (``INT8_CACHE``) before the run: the run reused
    # one of them or quantised (the first run on a checkout, or after the quantising code changed)
    int8_before: tuple[str, ...] = ()

    def env(self, **extra: str) -> dict[str, str]:
        """The environment for another rehearsal process with this run's cache."""
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        return {**env, "BENCH_CACHE_DIR": str(self.cache), **extra}

    def copy_to(self, target: Path) -> Path:
        """A copy of the rehearsal folder at ``target`` (for a test that resumes or changes it)."""
        shutil.copytree(self.dir, target, symlinks=True)
        return target

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "bench.cli", "rehearse", *args]


def run_rehearsal(base: Path) -> Rehearsal:
    """``bench rehearse --dataset <mini, bad input> --out <base>/reh`` in a process of its own."""
    dataset = write_mini_beir(
        base / "mini-beir-bad",
        titles=False,
        bad_query=True,
        query_ids=SMALL_QUERIES,
        n_judged=SMALL_JUDGED,
        n_other=SMALL_OTHER,
        max_words=SMALL_WORDS,
    )
    cache = base / "bench-cache"
    cache.mkdir(exist_ok=True)
    INT8_CACHE.mkdir(parents=True, exist_ok=True)
    (cache / "int8").symlink_to(INT8_CACHE, target_is_directory=True)
    before = tuple(sorted(p.name for p in INT8_CACHE.glob("minilm-standin-*") if p.is_dir()))
    out = base / "reh"
    stub = Rehearsal(out, dataset, cache, -1, "", "", before)
    done = subprocess.run(
        stub.command("--dataset", str(dataset), "--out", str(out)),
        cwd=ROOT,
        env=stub.env(),
        capture_output=True,
        text=True,
        check=False,
    )
    return Rehearsal(out, dataset, cache, done.returncode, done.stdout, done.stderr, before)


def shared_rehearsal(session_base: Path, shared_base: Path | None) -> Rehearsal:
    """The session's rehearsal: made in ``session_base``, or, under pytest-xdist (``shared_base``: the
    folder all workers of this session share), made by the first worker and read by the others."""
    if shared_base is None:
        return run_rehearsal(session_base / "shared-rehearsal")
    base = shared_base / "shared-rehearsal"
    base.mkdir(exist_ok=True)
    result = base / "result.json"
    with (shared_base / "shared-rehearsal.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the others wait here while the first makes it
        if result.is_file():
            raw = json.loads(result.read_text(encoding="utf-8"))
            paths = {k: Path(raw[k]) for k in ("dir", "dataset", "cache")}
            return Rehearsal(**{**raw, **paths, "int8_before": tuple(raw["int8_before"])})
        made = run_rehearsal(base)
        result.write_text(
            json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in asdict(made).items()}),
            encoding="utf-8",
        )
        return made


def servers_under(folder: Path) -> list[int]:
    """PIDs of live typesense-server processes whose command line names ``folder``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if "typesense-server" in cmdline and str(folder) in cmdline and state not in ("Z", "X"):
            found.append(int(proc.name))
    return found


def wait_for_server(proc: subprocess.Popen[bytes], tmp: Path) -> None:
    """Until the rehearsal ``proc`` (run with TMPDIR ``tmp``) has its Typesense server running; a rehearsal
    that ends before is a failure with its stderr."""
    while not servers_under(tmp):
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            pytest.fail(f"the rehearsal ended (exit {proc.returncode}) before its server ran:\n{err}")
        time.sleep(0.05)
