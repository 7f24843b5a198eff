"""``bench audit --example DIR``: a complete small study to practise the audit on, built without torch.

The study's own commands on the bundled MIRACL-de sample, in a new git repository ``DIR``: 1 PLAN.md alone
(this repository's plan, unchanged), 2 DEVIATIONS.md, datasets.lock, the bundled data, the licences and
the README/LICENSE of runs/ and results/, 3 the study: a first stage (BM25 with plain lower-case tokens,
bm25s) written as ``runs/first-stage/keyword-71k.trec``, the quality phase (``bench.quality.driver.execute``,
the code ``bench quality`` and ``bench rehearse`` run) reranking it with the rehearsal's lexical stand-in
bm25-standin (Snowball German stems) at the plan's depths, ``analysis report`` on the committed runs into
results/, and the study's manifest as results/manifest.json. Every row of the audit is then OK except the
timestamps (no proof, as the real study's until its proofs are confirmed).

Nothing of it is the study's: the folder must lie outside this repository, its README.md says EXAMPLE in its
first line, every commit message starts with "EXAMPLE:", and the manifest's study parameters carry
``"example": true`` and the stage's first-stage method.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from analysis.inputs.trec import write_run
from analysis.reporting import codeinfo
from analysis.reporting.report import write_report
from bench.core.errors import BenchError
from bench.core.plan import DEPTHS, FIRST_STAGE_DEPTH
from bench.quality.driver import execute
from bench.quality.phase import PhaseSpec
from bench.quality.study import Study
from bench.records.guard import preflight
from bench.records.provenance import collect_manifest
from bench.rehearse.inputs import load_inputs
from bench.rerankers.bm25 import BM25Standin

STAGE = "keyword-71k"  # a stage the plan reranks; its runs here come from the bundled sample, not Typesense
MODEL = "bm25-standin"  # the rehearsal's lexical stand-in (torch-free)
FIRST_STAGE = "BM25 (bm25s 0.3.16 defaults) over lower-cased word tokens, no stemming, no stop list"
QRELS = "data/bundled/miracl-de-dev/qrels.miracl-v1.0-de-dev.tsv"
SETUP_FILES = (
    "DEVIATIONS.md",
    "datasets.lock",
    "LICENSE",
    "LICENSES",
    "runs/README.md",
    "runs/LICENSE",
    "results/README.md",
    "results/LICENSE",
    "data/bundled",
)
PLAN_TITLE = "Measurement plan: German rerankers on MIRACL-de (round 1)"
README = """# EXAMPLE: a practice study, not the study's results

Built by `bench audit --example` from the repository at commit {commit}, to practise `bench audit` on:
its runs come from the bundled MIRACL-de sample (305 dev queries, the judged pool and NoMIRACL passages),
a BM25 first stage and the rehearsal's lexical stand-in `bm25-standin`, none of them a plan model or the
study's data. Its manifest says `"example": true`. Delete the folder when done; nothing refers to it.

To audit it again, from the repository: `bench audit --root DIR` (every row OK except the timestamps);
the tampers to try are in the repository's docs/reviewing.md ("Practise on an example study").
"""


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if done.returncode != 0:
        detail = done.stderr.strip() or done.stdout.strip()
        raise BenchError(f"git {' '.join(args)} in {root} failed: {detail}")
    return done.stdout.strip()


def _commit(root: Path, message: str) -> None:
    _git(root, "add", "-A")
    # a fixed identity, no signing, no hooks: the example never depends on the reviewer's git configuration
    _git(
        root,
        "-c",
        "user.name=bench audit --example",
        "-c",
        "user.email=example@invalid",
        "-c",
        "commit.gpgsign=false",
        "commit",
        "-q",
        "--no-verify",
        "-m",
        f"EXAMPLE: {message}",
    )


def check_target(target: Path, repo: Path) -> Path:
    """``target`` resolved; refused inside the repository (its runs/ and results/ are the study's) or when
    it exists and is not empty."""
    resolved = target.resolve()
    if resolved == repo.resolve() or repo.resolve() in resolved.parents:
        raise BenchError(
            f"{target}: lies inside the repository {repo}; the example study must live outside "
            "it (e.g. `bench audit --example /tmp/example-study`), so that nothing of it can be "
            "taken for the study's runs or results"
        )
    if resolved.exists() and (not resolved.is_dir() or any(resolved.iterdir())):
        raise BenchError(f"{target}: exists and is not an empty folder; name a new folder for the example")
    return resolved


def _first_stage(queries: dict[str, str], corpus: list[Any], path: Path) -> Path:
    """The top 100 of every query by BM25 over plain lower-case tokens (no stems): a stand-in first stage
    whose order bm25-standin's stemmed scores then change."""
    import bm25s  # heavy: only when an example is built (bench.rerankers.bm25 imports it the same way)

    texts = [f"{p.title} {p.text}" if getattr(p, "title", "") else p.passage_text for p in corpus]
    index = bm25s.BM25()
    index.index(bm25s.tokenize(texts, stopwords=None, show_progress=False), show_progress=False)
    qids = list(queries)
    ranked, scores = index.retrieve(
        bm25s.tokenize([queries[q] for q in qids], stopwords=None, show_progress=False),
        k=FIRST_STAGE_DEPTH,
        show_progress=False,
        n_threads=1,
    )
    run = {
        q: [(corpus[int(i)].docid, float(s)) for i, s in zip(ranked[n], scores[n], strict=True) if s > 0]
        for n, q in enumerate(qids)
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_run(path, run, tag=f"first-stage/{STAGE}")  # as `bench first-stage` tags it (audit row 7)
    return path


def _study(root: Path, work: Path) -> Path:
    """The quality phase on the example's first stage, with ``root`` as the repository; returns its folder."""
    inputs = load_inputs(None, None)  # the bundled sample
    pre = preflight("rehearsal", lock_names=["bundled"], root=root)
    prov = collect_manifest(kind="rehearsal", device="cpu", dtype="float32", root=root)
    params = {"example": True, "first_stage": {STAGE: FIRST_STAGE}, "models": [MODEL], "depths": list(DEPTHS)}
    study = Study.start(
        work, kind="rehearsal", plan_path=root / "PLAN.md", params=params, provenance=prov, preflight=pre
    )
    source = work / "runs" / "first-stage" / f"{STAGE}.trec"
    _first_stage(inputs.queries, list(inputs.corpus), source)
    corpus = [p.passage_text for p in inputs.corpus]
    execute(
        study,
        sources={STAGE: source},
        queries=inputs.queries,
        texts={p.docid: p.passage_text for p in inputs.corpus},
        load=lambda model: BM25Standin(corpus),
        spec=PhaseSpec(stages=(STAGE,), models=(MODEL,), depths=DEPTHS),
        runs_dir=work / "runs",
        resume_hint="build it again into a new folder (`bench audit --example NEWDIR`)",
        what="example study",
        stream=io.StringIO(),
    )
    return work


def _analysis_on_record(root: Path) -> None:
    """The analysis code that writes the example's results (the running package's files, as audit row 10
    recomputes them from the example's history), uv.lock, and the record runbook step 1 stamps
    (``timestamps/analysis-code.json``), all committed before the runs."""
    for rel, data in codeinfo.working_files(codeinfo.REPO).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    shutil.copy2(codeinfo.REPO / "uv.lock", root / "uv.lock")
    stamp = root / "timestamps" / "analysis-code.json"
    stamp.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(stamp, {codeinfo.KEY: codeinfo.code_record()})


def build_example(target: Path, repo: Path) -> Path:
    """Build the example study in ``target`` (a new folder outside ``repo``); returns its root."""
    root = check_target(target, repo)
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    shutil.copy2(repo / "PLAN.md", root / "PLAN.md")
    _commit(root, PLAN_TITLE)  # PLAN.md alone
    for rel in SETUP_FILES:
        src, dst = repo / rel, root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    commit = _git(repo, "rev-parse", "--short", "HEAD") if (repo / ".git").exists() else "unknown"
    (root / "README.md").write_text(README.format(commit=commit), encoding="utf-8")
    _analysis_on_record(root)
    _commit(
        root,
        "deviations, lock, bundled data, licences, the analysis code and its record (copied from "
        "the repository)",
    )
    with tempfile.TemporaryDirectory(prefix="bench-example-") as tmp:
        work = _study(root, Path(tmp) / "study")
        shutil.copytree(work / "runs", root / "runs", dirs_exist_ok=True)
        # `analysis report --out results` with the bundled qrels (the audit finds them by their lock hash)
        write_report(root / "runs", root / QRELS, root / "results")
        shutil.copy2(work / "manifest.json", root / "results" / "manifest.json")
    _commit(root, "the practice study: first-stage and reranked runs, results, manifest")
    return root
