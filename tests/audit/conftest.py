"""A small committed study in a temporary git repository, built from a real rehearsal's outputs.

History: 1 PLAN.md alone (the real plan), 2 DEVIATIONS.md, datasets.lock, the bundled data, licences,
the README/LICENSE of runs/ and results/, the analysis code, uv.lock and its record
(timestamps/analysis-code.json, not stamped), 3 the study: a rehearsal's quality phase (its own functions, see
``rehearsal_quality_phase``) run with this repository as its root
(so its manifest names this history's commit and hashes), its run files under runs/, and under results/
what `analysis report --runs runs --out results` writes from them, plus the rehearsal's manifest. The
qrels stay outside (passed with --qrels).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from analysis.reporting import codeinfo
from analysis.reporting.report import write_report
from bench.audit.example import PLAN_TITLE
from bench.audit.example import SETUP_FILES as EXAMPLE_SETUP_FILES
from bench.rehearse.run import Options
from tests.conftest import REPO_ROOT, git
from tests.support import audit_memo
from tests.support.heap import freeze_long_lived
from tests.support.rehearsal import write_mini_beir
from tests.support.typesense import EarlyTypesense

# the files the example study copies, plus the analysis code and lock that audit row 10 digests
SETUP_FILES = (*EXAMPLE_SETUP_FILES, "analysis", "uv.lock")
# what the study's first stages and stand-in import (the embedder, the stand-in reranker)
STUDY_IMPORTS = ("torch", "transformers", "sentence_transformers")


@dataclass(frozen=True)
class StudyRepo:
    root: Path
    qrels: Path
    rehearsal: Path


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy2(src, dst)


class StudyTypesense(EarlyTypesense):
    """The study's PyPI Typesense (what ``run_first_stages`` starts), started when the study repository is
    begun, so that its start overlaps the copies, commits and code record before the rehearsal. ``context``
    stands in for ``bench.rehearse.firststages.server_context``: it waits for the server and, on leaving,
    stops it and waits for its exit (the rehearsal's ``stop_later`` runs that beside the quality phase)."""

    def __init__(self) -> None:
        super().__init__("the study's Typesense", "study-typesense")

    @contextmanager
    def context(self, port: int | None) -> Iterator[Any]:
        assert port is None, "the study's rehearsal chooses no port"
        try:
            yield self.wait()
        finally:
            self.stop(wait=True)


def rehearsal_quality_phase(
    directory: Path, dataset: Path, root: Path, typesense: StudyTypesense | None = None
) -> Path:
    """The first part of ``bench rehearse`` with the rehearsal's own functions: lock check, inputs, the
    first stages on the PyPI Typesense, the quality phase with the stand-in (journal, run files), with
    ``root`` as the repository. The later steps (latency, int8, judged sample, costs, report) are left out:
    the audit needs the run files and the manifest, and those steps would take minutes on two cores.
    ``typesense``: a server started earlier, which the first stages use instead of starting their own."""
    import bench.rehearse.firststages as firststages
    from bench.core.plan import DEPTHS
    from bench.quality.driver import execute
    from bench.quality.phase import PhaseSpec
    from bench.quality.study import Study
    from bench.records.guard import preflight
    from bench.records.provenance import collect_manifest
    from bench.rehearse.firststages import run_first_stages, stage_paths
    from bench.rehearse.inputs import load_inputs
    from bench.rehearse.run import _embedder, _loader, reranked_stages
    from bench.rehearse.standin import standin_cut

    opts = Options(dataset=dataset)
    pre = preflight("rehearsal", lock_names=["bundled"], root=root)
    inputs = load_inputs(dataset, None)
    prov = collect_manifest(kind="rehearsal", device="cpu", dtype="float32", root=root)
    study = Study.start(
        directory,
        kind="rehearsal",
        plan_path=root / "PLAN.md",
        params=opts.params(),
        provenance=prov,
        preflight=pre,
    )
    qrels = inputs.write_qrels(directory / "qrels.tsv")
    # the cut of `bench rehearse --dataset` (the published 256, not the registry's 128: D-045), which
    # `bench reproduce` must read back from the committed manifest (test_reproduce)
    cut = standin_cut(dataset)
    stops: list[Callable[[], None]] = []
    with pytest.MonkeyPatch.context() as patch:
        if typesense is not None:
            patch.setattr(firststages, "server_context", typesense.context)
        stages = run_first_stages(
            directory,
            inputs,
            qrels,
            port=None,
            embedder_factory=_embedder(cut),
            log=lambda m: None,
            stop_later=stops.append,
        )
    # the server's stop runs beside the quality phase, as in the rehearsal (immediate for a temporary data
    # directory; a kept one's graceful stop waits about 2 s)
    stopping = [threading.Thread(target=stop, name="study-typesense-stop") for stop in stops]
    for thread in stopping:
        thread.start()
    try:
        ran = reranked_stages(tuple(s for s, st in stages.items() if st["status"] == "ran"))
        execute(
            study,
            sources={s: stage_paths(directory, s)[0] for s in ran},
            queries=inputs.queries,
            texts={p.docid: p.passage_text for p in inputs.corpus},
            load=_loader(True, [p.passage_text for p in inputs.corpus], cut),
            spec=PhaseSpec(stages=ran, models=opts.models, depths=DEPTHS),
            runs_dir=directory / "runs",
            resume_hint="rerun the test",
            what="rehearsal",
            stream=io.StringIO(),
        )
    finally:
        for thread in stopping:
            thread.join()
    return directory


def build_study_repo(base: Path) -> StudyRepo:
    typesense = StudyTypesense()  # its start overlaps the history's first commits
    try:
        return _build_study_repo(base, typesense)
    finally:
        typesense.stop(wait=True)  # when the rehearsal did not get to it


def _build_study_repo(base: Path, typesense: StudyTypesense) -> StudyRepo:
    root = base / "study"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    shutil.copy2(REPO_ROOT / "PLAN.md", root / "PLAN.md")
    git(root, "add", "PLAN.md")
    git(root, "commit", "-q", "-m", PLAN_TITLE)
    for rel in SETUP_FILES:
        _copy(REPO_ROOT / rel, root / rel)
    # the analysis code on record before the study (runbook step 1; audit row 10)
    (root / "timestamps").mkdir()
    record = {codeinfo.KEY: codeinfo.code_record(root)}
    (root / "timestamps" / "analysis-code.json").write_text(json.dumps(record))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "deviations, lock, data, licences")
    # 2 queries and 10 NoMIRACL passages, each cut to its first 40 words: `bench reproduce` (test_reproduce)
    # reruns the stand-in on them, and its cost is the candidates' tokens (uncut, most hit the cut of 256);
    # which cut a rerun used is asserted from the manifests' meta, not from the scores
    mini = write_mini_beir(base / "mini-beir", n_queries=2, n_other=10, max_words=40)
    reh = rehearsal_quality_phase(base / "reh", mini, root, typesense)
    shutil.copytree(reh / "runs", root / "runs", dirs_exist_ok=True)
    write_report(root / "runs", reh / "qrels.tsv", root / "results")  # `analysis report --out results`
    shutil.copy2(reh / "manifest.json", root / "results" / "manifest.json")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "study: runs and results of a rehearsal")
    return StudyRepo(root, reh / "qrels.tsv", reh)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """The quality phases these tests run (the study's, `bench reproduce`'s) collect garbage before every
    model they load (``free_device_memory``): the process's long-lived objects are frozen first, as in
    tests/quality (tests/support/heap.py), so each collection looks at what the test made."""
    freeze_long_lived()


@pytest.fixture(scope="module", autouse=True)
def _audit_work_once() -> Iterator[None]:
    """Each stage figure's numbers drawn, and the bundled sample read, once per process
    (tests/support/audit_memo.py), while this folder's modules run: the audits here recompute the report of
    studies whose figures mostly did not change (three figures, about 0.6 s CPU an audit)."""
    with audit_memo.installed():
        yield


@pytest.fixture(scope="session")
def study_repo(tmp_path_factory: pytest.TempPathFactory) -> StudyRepo:
    import importlib

    for name in STUDY_IMPORTS:  # imported, then frozen: the study's collections look at what it makes
        importlib.import_module(name)
    freeze_long_lived()
    with audit_memo.installed():  # a session fixture starts before the modules' memo: its figures are kept
        return build_study_repo(tmp_path_factory.mktemp("audit-study"))


@pytest.fixture
def clone(study_repo: StudyRepo, tmp_path: Path) -> Iterator[Path]:
    """A full clone of the study repository to tamper with."""
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(study_repo.root), str(target)], check=True)
    yield target
