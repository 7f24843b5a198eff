"""Disk and memory checks of ``bench doctor``: free space for a step's data (datasets.lock sizes), its models,
and keyword-full's server (the preflight's prediction, ``bench.firststage.preflight``)."""

from __future__ import annotations

from pathlib import Path

from bench.core import paths, plan
from bench.core.errors import BenchError
from bench.doctor.machine import Machine
from bench.doctor.outcome import Outcome, cannot_tell, ok, problem
from bench.firststage import preflight
from bench.integrity import datalock
from bench.rerankers import snapshots


def _gib(x: float) -> str:
    return f"{x / 2**30:.1f} GiB"


def _free(m: Machine, path: Path) -> int | None:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return m.disk_free(p)
    except OSError:
        return None


def _need(m: Machine, check: str, folder: Path, need: float, what: str) -> Outcome:
    free = _free(m, folder)
    if free is None:
        return cannot_tell(check, f"cannot read the free space of {folder}")
    if need > free:
        return problem(
            check,
            f"{what} needs {_gib(need)}, {folder} has {_gib(free)} free",
            f"free {_gib(need - free)} on that file system (or point the folder at a bigger disk)",
        )
    return ok(check, f"{what} needs {_gib(need)}, {folder} has {_gib(free)} free")


def disk_data(m: Machine, step: str) -> list[Outcome]:
    """The hub files of datasets.lock not on this machine yet, by their locked sizes."""
    lock = m.root / datalock.LOCK_NAME
    try:
        entries = datalock.read_lock(lock)
    except BenchError as exc:
        return [cannot_tell("disk", str(exc))]
    hub = [e for e in entries.values() if e.base == "hub"]
    if not hub:
        return [
            cannot_tell(
                "disk",
                f"{lock.name} has no sizes of the hub datasets yet (this step writes them); "
                f"the runbook estimates several GB for the full corpus; {paths.hub_dir()} has "
                + (_gib(f) if (f := _free(m, paths.hub_dir())) is not None else "unknown")
                + " free",
            )
        ]
    todo = [e for e in hub if not e.file(m.root).is_file()]
    need = float(sum(int(e.size) for e in todo))  # bytes: an integer sum
    return [
        _need(m, "disk", paths.hub_dir(), need, f"{len(todo)} of {len(hub)} locked hub files not here yet")
    ]


def disk_models(m: Machine, step: str) -> list[Outcome]:
    """Nothing in the repository records the sizes of the pinned snapshots: ok only when none is missing."""
    missing = [
        f"{repo}@{rev[:12]}"
        for mid in plan.LOCAL_RERANKERS
        for repo, rev in (
            (plan.RERANKERS[mid].model, plan.RERANKERS[mid].revision),
            (plan.RERANKERS[mid].code_repo, plan.RERANKERS[mid].code_revision),
        )
        if repo and rev and not snapshots.snapshot_path(repo, rev, paths.models_dir()).is_dir()
    ]
    emb = plan.EMBEDDING_MODEL
    if not snapshots.snapshot_path(emb.repo, emb.revision, paths.models_dir()).is_dir():
        missing.append(f"{emb.repo}@{emb.revision[:12]}")
    if not missing:
        return [ok("disk", "every pinned snapshot is here already: nothing to download")]
    free = _free(m, paths.models_dir())
    return [
        cannot_tell(
            "disk",
            f"{len(missing)} snapshots to fetch; no file in the repository records their sizes "
            f"(docs/runbook.md step 3 estimates about 40 GB); {paths.models_dir()} has "
            + (_gib(free) if free is not None else "unknown")
            + " free",
        )
    ]


def keyword_full(m: Machine, step: str) -> list[Outcome]:
    """Memory and disk for keyword-full, the preflight's own prediction (bench.firststage.preflight)."""
    try:
        pred = preflight.keyword_full_prediction(lock_path=m.root / datalock.LOCK_NAME)
    except BenchError as exc:
        return [cannot_tell("memory", f"keyword-full preflight: {exc}")]
    avail = m.memory_available()
    if avail is None:
        out = [cannot_tell("memory", "MemAvailable cannot be read (/proc/meminfo)")]
    elif pred.memory_bytes > avail:
        out = [
            problem(
                "memory",
                f"keyword-full's Typesense needs {_gib(pred.memory_bytes)} (preflight), this machine "
                f"has {_gib(avail)} available",
                "free memory or use a bigger machine before `first-stage keyword-full`",
            )
        ]
    else:
        out = [
            ok(
                "memory",
                f"keyword-full's Typesense needs {_gib(pred.memory_bytes)} (preflight), "
                f"{_gib(avail)} available",
            )
        ]
    for folder, need, _free_then, what in pred.disk_needs():
        out.append(_need(m, "disk", Path(folder), need, f"keyword-full ({what})"))
    return out
