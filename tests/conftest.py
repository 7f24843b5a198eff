"""Shared fixtures (owned by the "repo" helper; anyone may append a small, clearly named fixture)."""

from __future__ import annotations

import atexit
import gc
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from bench.firststage.server import TypesenseServer
    from tests.support.rehearsal import Rehearsal

REPO_ROOT = Path(__file__).resolve().parent.parent

# Under pytest-xdist (``-n 2``) each worker, and every process it starts, runs torch (and OpenMP, MKL, BLAS)
# with one intra-op thread: two workers on a 2-core machine that each spin two threads wait at the threads'
# barriers (the runbook chain's tiny models were about 40x slower so). Set before anything imports
# torch; a value the environment already sets is kept. Without xdist nothing changes.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

# Bytecode as on a user's machine and in the container (UV_COMPILE_BYTECODE=1): an environment that sets
# PYTHONDONTWRITEBYTECODE=1 (this development one does, field notes) makes every process the tests start
# (int8 quantisation children, adapter-check references, CLI runs) compile torch, transformers, optimum and
# nncf from source again: tests/rehearse/test_quantize_child.py took 86 s of CPU from a venv without .pyc
# files, 44 s with them. The tests' processes write their imports' bytecode once, as Python does by default;
# what a test checks does not depend on it (tests/runbook/test_runbook.py drops the variable for its chain).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
}


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout under test (the folder holding PLAN.md)."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def bundled_paths() -> dict[str, Path]:
    """The bundled real data files (data/bundled, see SOURCES.md) by short name."""
    base = REPO_ROOT / "data" / "bundled"
    return {
        "topics": base / "miracl-de-dev" / "topics.miracl-v1.0-de-dev.tsv",
        "qrels": base / "miracl-de-dev" / "qrels.miracl-v1.0-de-dev.tsv",
        "judged_docs": base / "miracl-de-dev" / "colbert-kit-judged-pool" / "docs.csv",
        "judged_qrels": base / "miracl-de-dev" / "colbert-kit-judged-pool" / "qrels.csv",
        "judged_queries": base / "miracl-de-dev" / "colbert-kit-judged-pool" / "queries.csv",
        "nomiracl_relevant": base / "miracl-de-nomiracl" / "relevant.de.test.vanilla_prompt.jsonl",
        "nomiracl_non_relevant": base / "miracl-de-nomiracl" / "non_relevant.de.test.vanilla_prompt.jsonl",
        "stopwords": base / "snowball-german-stop" / "stop.txt",
        "sources": base / "SOURCES.md",
    }


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity and no user config; returns stdout."""
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return proc.stdout


Commit = Mapping[str, bytes | str | None]  # path -> content (None deletes the file)


@pytest.fixture
def tmp_git_repo(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``tmp_git_repo([{"PLAN.md": "..."}, {"DEVIATIONS.md": "..."}], messages=[...])`` makes a git
    repository with one commit per mapping (path -> content, None deletes) and returns its root."""
    counter = [0]

    def make(commits: Sequence[Commit], messages: Sequence[str] | None = None) -> Path:
        counter[0] += 1
        root = tmp_path / f"repo{counter[0]}"
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        for i, files in enumerate(commits):
            for rel, content in files.items():
                path = root / rel
                if content is None:
                    git(root, "rm", "-q", rel)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, str):
                    path.write_text(content, encoding="utf-8")
                else:
                    path.write_bytes(content)
                git(root, "add", rel)
            message = messages[i] if messages is not None else f"commit {i}"
            git(root, "commit", "-q", "--allow-empty", "-m", message)
        return root

    return make


@pytest.fixture(autouse=True)
def no_anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches the real Anthropic API by accident (the rehearsal's judged step judges when a key is
    set): tests that need a key set one explicitly, with a loopback ``base_url``."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


@pytest.fixture(autouse=True)
def _lock_enforcement_ends_with_the_test() -> Iterator[None]:
    """``bench.records.guard.preflight`` makes readers check files against the lock it verified for the rest
    of the process (``bench.integrity.enforce``); in the test process that must end with the test that ran
    it."""
    yield
    import sys

    enforce = sys.modules.get("bench.integrity.enforce")
    if enforce is not None:
        enforce.deactivate()


@pytest.fixture(scope="session")
def rehearsal(tmp_path_factory: pytest.TempPathFactory) -> Rehearsal:
    """The session's one ``bench rehearse`` run on the mini dataset with its bad input
    (``tests.support.rehearsal``): tests read it; a test that resumes or changes a rehearsal copies it first.
    Under pytest-xdist one worker makes it and the others wait for it."""
    from tests.support.rehearsal import shared_rehearsal

    shared = tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") else None
    return shared_rehearsal(tmp_path_factory.mktemp("rehearsal"), shared)


@pytest.fixture(scope="session")
def typesense() -> Iterator[TypesenseServer]:
    """The session's one PyPI Typesense 0.24.1 server (tests/support/typesense.py), for tests that only need a
    server: they never kill or restart it, and tests/firststage's ``server`` hands it to each module empty."""
    from bench.firststage.server import local_typesense

    with local_typesense() as server:
        yield server


@pytest.fixture(scope="session")
def analysis_python() -> Iterator[str]:
    """The stand-in for this environment's ``python`` whose runs fork from one server per test process
    (tests/support/pyforks.py) that has imported what ``analysis`` imports and computed the code record
    (tests/worst_inputs/warm.py): tests/test_worst_inputs.py, tests/worst_inputs/ and
    tests/analysis/test_properties.py start their command lines with it (one server, not one per module)."""
    from tests.support.pyforks import stand_in_python

    with stand_in_python("analysis", ("tests.worst_inputs.warm",)) as python:
        yield python


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup`` (pyproject's default) shares the tests out as tests/support/xdist_groups.py says:
    the shared rehearsal's tests on one worker, a module's tests on one worker, the longest units first."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.support.xdist_groups import GroupScheduling

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.support.xdist_groups import check_rehearsal_users

    check_rehearsal_users(items)


# gc in the test processes: the objects that exist after collection (torch, transformers, the collected
# items: about 4,000 modules) move to the permanent generation, and the young generations are collected less
# often (20,000 allocations instead of 700). tests/analysis alone: 8,574 collections, 3.1 s -> 352, 1.2 s.
# Product code and the subprocesses the tests start keep Python's defaults.
GC_THRESHOLDS = (20_000, 20, 20)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


# An xdist worker ends without the interpreter's finalisation: with torch, transformers and the collected
# tests loaded, Python's last garbage collections and module teardown take 2 to 10 s after the last test,
# and the main process waits for them (xdist's node teardown) before it reports. Registered at this import,
# the hook runs after every atexit function registered later (torch's, weakref finalizers, the tests' own)
# and only once the worker has unconfigured normally; it flushes the logging handlers and streams first.
_UNCONFIGURED: list[bool] = []


def pytest_unconfigure(config: pytest.Config) -> None:
    _UNCONFIGURED.append(True)


def _end_worker_now() -> None:
    if not _UNCONFIGURED:  # an abnormal end: the interpreter's own exit says what happened
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            stream.flush()
    os._exit(0)


if os.environ.get("PYTEST_XDIST_WORKER"):
    atexit.register(_end_worker_now)
