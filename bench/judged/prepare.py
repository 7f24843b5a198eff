"""``bench judged prepare``: the plan's groups from a quality study's runs, then packet and sealed key.

Groups (plan section "Judged sample of unjudged passages"): on hybrid-71k the three best rated models by
mean nDCG@10 at depth 100 (ties: smaller model id), on keyword-full the best rated model there. "Rated" is
the adapter checks' verdict (``bench.quality.library.rated``). Every run used must be the study's: by
default a run committed under the runs folder, unchanged (what a fresh clone has, on any machine with the
data); with a study directory, a run its manifest lists (by stage, model and depth, so the manifest's
absolute paths of another machine or of the container do not matter). Runs from another study are refused.
Fewer than three rated models with a hybrid-71k run, or none on keyword-full, is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.inputs.trec import read_run_table
from analysis.stats.metrics import mean_scores
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import (
    CORPUS_71K,
    CORPUS_FULL,
    JUDGED_SAMPLE_FULL_STAGE,
    JUDGED_SAMPLE_STAGE,
    JUDGED_SAMPLE_TOP_MODELS,
    MAIN_METRIC,
    QUALITY_DEPTH,
    RERANKERS,
)
from bench.data import hub as data_hub
from bench.integrity import git
from bench.integrity import hub as integrity_hub
from bench.integrity.hashing import sha256_file
from bench.judged.selection import GroupSpec
from bench.quality.library import rated
from bench.quality.study import read_manifest


def group_id(stage: str, model: str, depth: int = QUALITY_DEPTH) -> str:
    return f"{stage}/{model}@{depth}"


def ranked(path: Path, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, list[str]]:
    table = read_run_table(path, qrels_qids=set(qrels)).as_dict()
    return {q: [d for d, _ in docs] for q, docs in table.items()}


def study_runs(study_dir: Path) -> dict[str, dict[str, Any]]:
    """``<stage>/<model>@<depth>`` -> the latest record of that run in the study's sessions."""
    manifest = read_manifest(study_dir)
    return {
        group_id(str(r["stage"]), str(r["model"]), int(r["depth"])): r
        for s in manifest["sessions"]
        for r in s.get("runs") or []
        if r.get("stage") and r.get("model") and r.get("depth")
    }


def _not_recorded(key: str, path: Path, recorded: dict[str, dict[str, Any]]) -> str | None:
    """Why ``path`` is not the run ``key`` that the study recorded: by SHA-256 where the session recorded it;
    else by path where the recorded path exists on this machine; else (another machine's or the container's
    absolute path) by stage, model and depth."""
    rec = recorded.get(key)
    if rec is None:
        return f"its manifest does not list {key}"
    if isinstance(rec.get("sha256"), str):
        return None if rec["sha256"] == sha256_file(path) else f"{key} differs from the run it recorded"
    there = Path(str(rec.get("path") or ""))
    if there.is_file() and there.resolve() != path.resolve():
        return f"it recorded {key} at {there}"
    return None


def uncommitted_run(path: Path) -> str | None:
    """Why ``path`` is not a committed, unchanged file of its git checkout, or None when it is."""
    folder = path.resolve().parent
    if not git.is_repo(folder):
        return "not in a git checkout"
    name = path.name
    if not git.run_git(folder, "ls-files", "-z", "--", name).strip(b"\0"):
        return "not committed"
    if git.run_git(folder, "status", "--porcelain=v1", "-z", "--", name).strip(b"\0"):
        return "changed since its commit"
    return None


def check_study_runs(paths: Sequence[tuple[str, Path]], study_dir: Path | None) -> dict[str, Any]:
    """Refuse a run that is not the study's (see the module docstring); returns how they were checked."""
    if study_dir is not None:
        recorded = study_runs(study_dir)
        for key, path in paths:
            why = _not_recorded(key, path, recorded)
            if why is not None:
                raise BenchError(
                    f"{path}: not a run written by the study in {study_dir} ({why}); pass the runs folder "
                    "and the study directory that belong together"
                )
        return {"checked_by": "study manifest", "study": str(study_dir)}
    for _, path in paths:
        why = uncommitted_run(path)
        if why is not None:
            raise BenchError(
                f"{path}: {why}; the judged sample is drawn from the study's committed runs. Commit the "
                "quality phase's run files first, or pass --study DIR (the study directory that wrote them)"
            )
    return {"checked_by": "committed runs (git, unchanged)", "study": None}


def best_models(
    runs_dir: Path, stage: str, models: Sequence[str], qrels: Mapping[str, Mapping[str, int]]
) -> list[tuple[str, float, Path]]:
    """(model, mean nDCG@10, run path) of ``models`` with a depth-100 run on ``stage``, best first."""
    out = []
    for m in models:
        path = runs_dir / stage / f"{m}@{QUALITY_DEPTH}.trec"
        if path.is_file():
            table = read_run_table(path, qrels_qids=set(qrels))
            out.append((m, mean_scores(qrels, table, measures=[MAIN_METRIC])[MAIN_METRIC], path))
    return sorted(out, key=lambda x: (-x[1], x[0]))


def plan_groups(
    runs_dir: Path,
    qrels: Mapping[str, Mapping[str, int]],
    *,
    checks_dir: Path,
    study_dir: Path | None,
    setting: tuple[str, str | None] | None = None,
) -> tuple[list[GroupSpec], dict[str, Any]]:
    """The plan's four groups and a record of how they were chosen (models, nDCG@10, run SHA-256).

    ``setting``: the (device, requested dtype) the runs were scored with (``quality_setting``); a model is
    rated by its check in that setting, as the quality phase rated it (None: ``<model>.json`` whatever it
    records)."""
    device, dtype = setting if setting is not None else (None, None)
    keep, skipped, _ = rated(list(RERANKERS), checks_dir, device=device, dtype=dtype)
    hybrid = best_models(runs_dir, JUDGED_SAMPLE_STAGE, keep, qrels)
    if len(hybrid) < JUDGED_SAMPLE_TOP_MODELS:
        raise BenchError(
            f"{runs_dir / JUDGED_SAMPLE_STAGE}: {len(hybrid)} rated model(s) with a depth-{QUALITY_DEPTH} "
            f"run ({', '.join(m for m, *_ in hybrid) or 'none'}); the judged sample needs the "
            f"{JUDGED_SAMPLE_TOP_MODELS} best rated models. Run `{hint('quality')}` first"
        )
    full = best_models(runs_dir, JUDGED_SAMPLE_FULL_STAGE, keep, qrels)
    if not full:
        raise BenchError(
            f"{runs_dir / JUDGED_SAMPLE_FULL_STAGE}: no rated model has a depth-{QUALITY_DEPTH} run; the "
            f"judged sample needs the best rated model there. Run `{hint('quality')}` first"
        )
    chosen = [(JUDGED_SAMPLE_STAGE, *h) for h in hybrid[:JUDGED_SAMPLE_TOP_MODELS]]
    chosen.append((JUDGED_SAMPLE_FULL_STAGE, *full[0]))
    checked = check_study_runs([(group_id(stage, m), path) for stage, m, _, path in chosen], study_dir)
    groups = [GroupSpec(group_id(stage, m), ranked(path, qrels)) for stage, m, _, path in chosen]
    record = {
        "groups_from": [
            {
                "group": group_id(stage, m),
                "stage": stage,
                "model": m,
                MAIN_METRIC: score,
                "run": str(path),
                "run_sha256": sha256_file(path),
            }
            for stage, m, score, path in chosen
        ],
        "ranking": {
            stage: [{"model": m, MAIN_METRIC: s} for m, s, _ in ranking]
            for stage, ranking in ((JUDGED_SAMPLE_STAGE, hybrid), (JUDGED_SAMPLE_FULL_STAGE, full))
        },
        "not_rated": skipped,
        "runs_checked": checked,
    }
    return groups, record


def passage_texts(docids: set[str]) -> dict[str, str]:
    """docid -> ``title + "\\n" + text`` from the 71k corpus, the rest streamed from the full corpus."""
    passages = data_hub.read_corpus_71k(integrity_hub.snapshot_dir(CORPUS_71K))
    texts = {p.docid: p.passage_text for p in passages if p.docid in docids}
    rest = docids - set(texts)
    if rest:
        for p in data_hub.iter_corpus_full(integrity_hub.snapshot_dir(CORPUS_FULL)):
            if p.docid in rest:
                texts[p.docid] = p.passage_text
    return texts
