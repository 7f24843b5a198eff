"""``bench status``: where the study stands, step by step of ``docs/runbook.md``.

Reads only what the phases leave behind (committed or not) under ``runs/`` and ``results/``, the proofs and
``datasets.lock``, plus the machine-local snapshots under ``data/``; it imports no torch, opens no network
connection and needs no GPU. Every step of the runbook is printed as ``done``, ``partial`` (with what is
missing: stages, models, depths, sessions), ``not started`` or, for the reviewer's checks that write nothing,
``to check``; then the next command for this machine, exactly as the runbook writes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from analysis.core.plan import INT8_MODEL
from bench.core import paths, plan
from bench.core.errors import BenchError
from bench.core.hints import bench_command, hint
from bench.core.paths import RUN_FOLDERS
from bench.core.runbook import MACHINES, Step, read_runbook
from bench.integrity.hub import HUB_DATASETS
from bench.latency.presets import PRESETS

DONE, PARTIAL, NOT_STARTED, TO_CHECK = "done", "partial", "not started", "to check"
INT8_ID = INT8_MODEL
RUNNABLE_ON = {  # steps a machine can run (a machine with internet is assumed to be any machine)
    "gpu-desktop": ("gpu-desktop", "internet", "any"),
    "cpu-server": ("cpu-server", "internet", "any"),
    "internet": ("internet", "any"),
    "any": ("any", "internet"),
}


@dataclass
class PhaseState:
    id: str
    machine: str
    state: str
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    next: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "machine": self.machine,
            "state": self.state,
            "missing": self.missing,
            "notes": self.notes,
            "next": self.next,
        }


@dataclass(frozen=True)
class Found:
    """What a checker found: of ``total`` expected items ``absent`` are missing, described by ``missing``
    (what is missing, a substring of the runbook command that makes it)."""

    total: int
    absent: int
    missing: list[tuple[str, str]]
    notes: tuple[str, ...] = ()
    next_command: str | None = None  # a command that is not in the runbook's text (e.g. --session NAME)


def _state(found: Found) -> str:
    if found.absent == 0:
        return DONE
    return NOT_STARTED if found.absent >= found.total else PARTIAL


def _items(missing: list[tuple[str, str]], total: int, notes: Iterable[str] = ()) -> Found:
    return Found(total, len(missing), missing, tuple(notes))


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None


def _group(items: Iterable[tuple[str, str, int]]) -> list[tuple[str, str]]:
    """(model, stage, k) triples to one line per model: ``qwen3-4b: hybrid-71k@50, keyword-full@20,100``."""
    by_model: dict[str, dict[str, list[int]]] = {}
    for model, stage, k in items:
        by_model.setdefault(model, {}).setdefault(stage, []).append(k)
    return [
        (f"{m}: " + ", ".join(f"{s}@{','.join(map(str, ks))}" for s, ks in stages.items()), m)
        for m, stages in by_model.items()
    ]


# --- the checkers, one per runbook step ------------------------------------------------------------------


def _prepare(root: Path) -> Found:
    """Step 0 leaves ``.env`` (git-ignored, per machine) with UID and GID for compose; the image and the
    doctor's verdict are not files of the checkout (run `bench doctor` to see it). A ``UID`` line without a
    number (``UID``, ``GID=``) is not a value compose can use."""
    try:
        lines = (root / ".env").read_bytes().decode("utf-8-sig").splitlines()
    except OSError:
        lines = []
    except UnicodeDecodeError as exc:
        said = f".env is not UTF-8 text ({exc.reason} at byte {exc.start}); write it again"
        return _items([(said, "printf")], 2)
    values: dict[str, str] = {}
    for ln in lines:
        name, _, value = ln.strip().removeprefix("export ").partition("=")
        values[name.strip()] = value.strip().strip("'\"").strip()
    missing = [
        (
            f".env has no {n}= line (this machine)"
            if n not in values
            else f".env's {n} line holds no number (this machine)",
            "printf",
        )
        for n in ("UID", "GID")
        if not values.get(n, "").isdigit()
    ]
    return _items(missing, 2, (f"per machine: run `{bench_command('doctor')}` to check the machine itself",))


def _stamp(root: Path) -> Found:
    missing = []
    if not (root / "PLAN.md.ots").is_file():
        missing.append(("PLAN.md.ots", "stamp PLAN.md"))
    if not any((root / "timestamps" / "DEVIATIONS.md").glob("*.ots")):
        missing.append(
            ("a proof of DEVIATIONS.md (timestamps/DEVIATIONS.md/<sha256>.ots)", "stamp DEVIATIONS.md")
        )
    return _items(missing, 2)


def _data(root: Path) -> Found:
    lock = _json(root / "datasets.lock")
    entries = lock.get("entries", {}) if isinstance(lock, dict) else {}
    locked = {e.get("dataset") for e in entries.values() if isinstance(e, dict)}
    missing = [
        (f"datasets.lock has no entries of {name}", "data fetch")
        for name in HUB_DATASETS
        if name not in locked
    ]
    notes = []
    hub = Path(os.environ.get("BENCH_HUB_DIR", root / "data" / "hub"))
    if not missing and not hub.is_dir():
        notes.append(
            f"not fetched on this machine ({hub} is absent): run `data fetch` and `data verify` here"
        )
    return _items(missing, len(HUB_DATASETS), notes)


def _snapshot_present(models: Path, repo: str, revision: str) -> bool:
    return (models / ("models--" + repo.replace("/", "--")) / "snapshots" / revision).is_dir()


def _models(root: Path) -> Found:
    models = Path(os.environ.get("BENCH_MODELS_DIR", root / "data" / "models"))
    missing = []
    total = 2  # the embedder and the Voyage tokenizer, plus every snapshot below
    for m in plan.LOCAL_RERANKERS:
        r = plan.RERANKERS[m]
        for repo, rev in ((r.model, r.revision), (r.code_repo, r.code_revision)):
            total += bool(repo and rev)
            if repo and rev and not _snapshot_present(models, repo, rev):
                missing.append((f"{m} snapshot ({repo}@{rev[:12]})", "models fetch"))
    emb = plan.EMBEDDING_MODEL
    if not _snapshot_present(models, emb.repo, emb.revision):
        missing.append((f"Arctic embedder snapshot ({emb.repo}@{emb.revision[:12]})", "models fetch"))
    tok = models / "models--voyageai--rerank-3" / "snapshots"
    if not any(tok.glob("*/tokenizer.json")):
        missing.append(("the Voyage tokenizer (voyageai/rerank-3 tokenizer.json)", "models fetch"))
    return _items(missing, total, ("snapshots are per machine (data/models/)",))


def _first_stages(root: Path) -> Found:
    missing = []
    for s in plan.STAGES:
        lacks = [
            p
            for p in (f"runs/first-stage/{s}.trec", f"results/first-stage/{s}.json")
            if not (root / p).is_file()
        ]
        if lacks:
            missing.append((f"{s} ({', '.join(lacks)})", f"first-stage {s}"))
    return _items(missing, len(plan.STAGES))


def adapter_checks(root: Path) -> dict[str, bool | None]:
    """model -> rated (True/False), None when its check file is absent or unreadable."""
    out: dict[str, bool | None] = {}
    for m in plan.RERANKERS:
        folder = root / "results" / "adapter-checks"
        # <model>.json: the check in the default setting; <model>@<device>-<dtype>.json: in another one
        files = [folder / f"{m}.json", *sorted(folder.glob(f"{m}@*.json"))]
        data = next((d for d in map(_json, files) if isinstance(d, dict)), None)
        out[m] = data["rated"] if isinstance(data, dict) and isinstance(data.get("rated"), bool) else None
    return out


def _check_adapters(root: Path) -> Found:
    checks = adapter_checks(root)
    missing = [
        (f"{m} (results/adapter-checks/{m}.json)", "check-adapters") for m, r in checks.items() if r is None
    ]
    notes = tuple(
        f"{m}: not rated (its result file gives the reason)" for m, r in checks.items() if r is False
    )
    return _items(missing, len(checks), notes)


def _runs_missing(
    folder: Path, stages: Iterable[str], models: Iterable[str], depths: Iterable[int]
) -> list[tuple[str, str, int]]:
    return [
        (m, s, k)
        for m in models
        for s in stages
        for k in depths
        if not (folder / s / f"{m}@{k}.trec").is_file()
    ]


def _quality(root: Path) -> Found:
    checks = adapter_checks(root)
    rated = [m for m, r in checks.items() if r is not False]
    gaps = _runs_missing(root / RUN_FOLDERS["quality"], plan.RERANKED_STAGES, rated, plan.DEPTHS)
    notes = [f"{m}: not rated, not run" for m, r in checks.items() if r is False]
    unchecked = [m for m, r in checks.items() if r is None]
    if unchecked:
        notes.append(f"no adapter check yet (quality skips these until rated): {', '.join(unchecked)}")
    total = len(rated) * len(plan.RERANKED_STAGES) * len(plan.DEPTHS)
    return Found(total, len(gaps), [(line, "bench quality") for line, _ in _group(gaps)], tuple(notes))


def _rerun(root: Path, folder: str, models: tuple[str, ...], depths: tuple[int, ...], command: str) -> Found:
    gaps = _runs_missing(root / folder, (plan.DETERMINISM_STAGE,), models, depths)
    verdicts = root / Path(folder).parent / "verdicts.json"
    missing = [(line, command) for line, _ in _group(gaps)]
    if not verdicts.is_file():
        missing.append((f"{verdicts.relative_to(root)}", command))
    total = len(models) * len(depths) + 1
    return Found(total, len(gaps) + (not verdicts.is_file()), missing)


def _determinism(root: Path) -> Found:
    return _rerun(root, RUN_FOLDERS["determinism"], plan.DETERMINISM_MODELS, plan.DEPTHS, "bench determinism")


def _dtype_check(root: Path) -> Found:
    missing: list[tuple[str, str]] = []
    total = 0
    for name in ("cpu-fp32", "gpu"):
        gaps = _runs_missing(
            root / RUN_FOLDERS[f"dtype-check {name}"],
            (plan.DETERMINISM_STAGE,),
            plan.DTYPE_CHECK_MODELS,
            (plan.QUALITY_DEPTH,),
        )
        total += len(gaps)
        missing += [(f"{name} {line}", "dtype-check") for line, _ in _group(gaps)]
    if not (root / "results" / "dtype-check" / "verdicts.json").is_file():
        missing.append(("results/dtype-check/verdicts.json", "dtype-check"))
    verdict = not (root / "results" / "dtype-check" / "verdicts.json").is_file()
    return Found(2 * len(plan.DTYPE_CHECK_MODELS) + 1, total + verdict, missing)


def _pitfalls(root: Path) -> Found:
    gaps = _runs_missing(
        root / RUN_FOLDERS["pitfalls"], (plan.PITFALL_STAGE,), plan.PITFALL_RUN_IDS, plan.DEPTHS
    )
    expected = len(plan.PITFALL_RUN_IDS) * len(plan.DEPTHS)
    missing = [(line, "--pitfalls") for line, _ in _group(gaps)]
    return Found(expected, len(gaps), missing)


def _int8(root: Path) -> Found:
    models = Path(os.environ.get("BENCH_MODELS_DIR", root / "data" / "models"))
    items = [
        (
            "results/int8/calibration-set.json",
            root / "results/int8/calibration-set.json",
            "int8 calibration-set",
        ),
        (
            "the quantised folder (data/models/bge-v2-m3-int8, this machine)",
            models / INT8_ID / "int8-manifest.json",
            "int8 quantize",
        ),
        (
            f"runs/{plan.PITFALL_STAGE}/{INT8_ID}@{plan.QUALITY_DEPTH}.trec",
            root / RUN_FOLDERS["int8 quality"] / plan.PITFALL_STAGE / f"{INT8_ID}@{plan.QUALITY_DEPTH}.trec",
            "int8 quality",
        ),
        (
            "results/int8/scores-desktop.json",
            root / "results/int8/scores-desktop.json",
            "--write results/int8/scores-desktop",
        ),
    ]
    missing = [(what, cmd) for what, path, cmd in items if not path.is_file()]
    return _items(missing, len(items))


def _blocks(latency: Path, publication: str, kind: str) -> dict[str, set[tuple[str, int, int]]]:
    """session -> {(target, k, pass)} of the finished block files."""
    out: dict[str, set[tuple[str, int, int]]] = {}
    base = latency / publication / kind
    for f in base.glob("*/*/k*-pass*.json") if base.is_dir() else ():
        if f.name.startswith("."):
            continue
        k, _, p = f.stem[1:].partition("-pass")
        if k.isdigit() and p.isdigit():
            out.setdefault(f.parent.parent.name, set()).add((f.parent.name, int(k), int(p)))
    return out


def _preset_blocks(name: str) -> set[tuple[str, int, int]]:
    pre = PRESETS[name]
    return {(m, k, p) for m in pre.models for k in pre.rule(m).depths for p in range(1, pre.passes + 1)}


def _missing_blocks(
    found: dict[str, set[tuple[str, int, int]]], want: set[tuple[str, int, int]]
) -> list[tuple[str, int, int]]:
    have = set().union(*found.values()) if found else set()
    return sorted(want - have)


def _block_lines(gaps: list[tuple[str, int, int]], command: str) -> list[tuple[str, str]]:
    by: dict[str, list[str]] = {}
    for target, k, p in gaps:
        by.setdefault(target, []).append(f"k{k}-pass{p}")
    return [(f"{t}: {', '.join(v)}", command) for t, v in by.items()]


def _latency_gpu(root: Path) -> Found:
    want = _preset_blocks("gpu")
    gaps = _missing_blocks(_blocks(root / "results" / "latency", "published", "gpu"), want)
    return Found(len(want), len(gaps), _block_lines(gaps, "latency gpu"))


def _latency_desktop(root: Path) -> Found:
    want = _preset_blocks("cpu-pre")
    gaps = _missing_blocks(_blocks(root / "results" / "latency", "not-published", "cpu"), want)
    missing = _block_lines(gaps, "--pre-measurement")
    fs = _blocks(root / "results" / "latency", "published", "first-stage")
    have = {t for blocks in fs.values() for t, _, _ in blocks}
    records = sorted(p.stem for p in (root / "results" / "first-stage").glob("*.json"))
    missing += [(f"first-stage latency of {s}", "latency first-stage") for s in records if s not in have]
    if not records:
        missing.append(("first-stage latency (no first-stage records yet)", "latency first-stage"))
    fs_missing = max(len(records), 1) - len(have & set(records))
    return Found(len(want) + max(len(records), 1), len(gaps) + fs_missing, missing)


def _latency_cpu(root: Path) -> Found:
    want = _preset_blocks("cpu")
    gaps = _missing_blocks(_blocks(root / "results" / "latency", "published", "cpu"), want)
    missing = _block_lines(gaps, "latency cpu --published")
    if not (root / "results" / "int8" / "scores-ccx33.json").is_file():
        missing.insert(0, ("results/int8/scores-ccx33.json (int8 agreement on the server)", "--against"))
    scores = not (root / "results" / "int8" / "scores-ccx33.json").is_file()
    return Found(len(want) + 1, len(gaps) + scores, missing)


def _latency_api(root: Path) -> Found:
    sessions = _blocks(root / "results" / "latency", "published", "api")
    want = _preset_blocks("api")
    missing: list[tuple[str, str]] = []
    complete = [s for s, blocks in sorted(sessions.items()) if want <= blocks]
    next_command = None
    for s, blocks in sorted(sessions.items()):
        gaps = sorted(want - blocks)
        if gaps:
            missing += [(f"session {s}: {line}", "latency api") for line, _ in _block_lines(gaps, "")]
            if next_command is None:
                next_command = _api_resume(root, s)
    more = max(plan.API_TIMES_OF_DAY - len(sessions), 0)
    if more > 0:
        missing.append(
            (
                f"{more} more session(s) of {plan.API_TIMES_OF_DAY} (sessions so far: "
                f"{', '.join(sorted(sessions)) or 'none'})",
                _next_label(sessions),
            )
        )
    total = plan.API_TIMES_OF_DAY * len(want)
    absent = (
        max(total - sum(len(want & b) for b in sessions.values()), 0)
        if len(complete) < plan.API_TIMES_OF_DAY
        else 0
    )
    return Found(total, absent, missing if absent else [], next_command=next_command)


def _api_resume(root: Path, session: str) -> str | None:
    """The resume command of an unfinished API session, with the opt-out its blocks record."""
    for f in sorted((root / "results" / "latency" / "published" / "api" / session).glob("*/k*-pass*.json")):
        data = _json(f)
        api = data.get("api") if isinstance(data, dict) else None
        opt = api.get("training_opt_out") if isinstance(api, dict) else None
        if opt in ("yes", "no"):
            return hint(f"latency api --training-opt-out {opt} --session {session}")
    return None


def _next_label(sessions: dict[str, Any]) -> str:
    for label in ("morning-utc", "afternoon-utc", "evening-utc"):
        if not any(s.endswith(label) for s in sessions):
            return f"--time-of-day {label}"
    return "latency api"


def _costs_inputs(root: Path) -> Found:
    costs = root / "results" / "costs"
    missing = []
    if not (costs / "passage-tokens.json").is_file():
        missing.append(("results/costs/passage-tokens.json", "costs passage-tokens"))
    lacks = [n for n in ("eurofxref-hist.csv", "eurofxref-hist.json") if not (costs / n).is_file()]
    if lacks:
        missing.append(
            (f"the ECB reference rates ({', '.join('results/costs/' + n for n in lacks)})", "ecb-rates")
        )
    return _items(missing, 2)


PRICE_GROUPS = ("api.voyage-rerank-3", "api.voyage-rerank-3-lite", "server.ccx33-ipv4")


def _prices(root: Path) -> Found:
    """prices.toml holds every price the plan does not fix (format: analysis/costs/prices.py); whether each
    is valid is `analysis report`'s check."""
    try:
        data = tomllib.loads((root / "prices.toml").read_text(encoding="utf-8-sig"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return Found(1, 1, [(f"prices.toml cannot be read ({exc})", "prices.toml")])
    missing = []
    for group in PRICE_GROUPS:
        kind, _, name = group.partition(".")
        if not isinstance(data.get(kind, {}).get(name), dict):
            missing.append((f"[{group}]", "prices.toml"))
    llms = data.get("llm", {})
    n = len(llms) if isinstance(llms, dict) else 0
    if n < plan.CONTEXT_REFERENCE_LLMS:
        missing.append(
            (
                f'{plan.CONTEXT_REFERENCE_LLMS - n} of {plan.CONTEXT_REFERENCE_LLMS} [llm."<name>"]',
                "prices.toml",
            )
        )
    return Found(
        len(PRICE_GROUPS) + plan.CONTEXT_REFERENCE_LLMS,
        len(missing) + max(plan.CONTEXT_REFERENCE_LLMS - n - 1, 0),
        missing,
    )


def _judged(root: Path) -> Found:
    if (root / "results" / "judged" / "labels.json").is_file():
        return Found(2, 0, [])
    packet = _json(root / "studies" / "judged" / "packet.json")
    if packet is None:
        return Found(2, 2, [("the packet (studies/judged/packet.json) and the labels", "judged prepare")])
    pairs = packet.get("pairs") if isinstance(packet, dict) else packet
    n = len(pairs) if isinstance(pairs, list) else None
    journal = root / "studies" / "judged" / "journal.jsonl"
    done = (
        sum(1 for ln in journal.read_text(encoding="utf-8").splitlines() if ln.strip())
        if journal.is_file()
        else 0
    )
    return Found(
        2,
        1,
        [
            (
                f"results/judged/labels.json (journal lines {done} of {n if n is not None else '?'} pairs)",
                "judged run",
            )
        ],
    )


def _report(root: Path) -> Found:
    items = [("results/quality/study.json", "report --runs"), ("results/report.md", "report --runs")]
    missing = [(p, cmd) for p, cmd in items if not (root / p).is_file()]
    sections = {
        "results/costs.json": root / "results/costs/passage-tokens.json",
        "results/judged.json": root / "results/judged/labels.json",
        "results/pitfalls.json": root / RUN_FOLDERS["pitfalls"],
    }
    if missing:
        return _items(missing, len(items))
    stale = [
        (f"{out} (its inputs exist)", "report --runs")
        for out, src in sections.items()
        if src.exists() and not (root / out).is_file()
    ]
    return _items(stale, len(items) + len(stale))


def _audit(root: Path) -> Found:
    return Found(1, 1, [("bench audit writes nothing: run it to see the table", "bench-cpu audit")])


def _stamp_later(root: Path) -> Found:
    dev = root / "DEVIATIONS.md"
    if not dev.is_file():
        return Found(1, 1, [("DEVIATIONS.md is missing", "stamp DEVIATIONS.md")])
    sha = hashlib.sha256(dev.read_bytes()).hexdigest()
    if (root / "timestamps" / "DEVIATIONS.md" / f"{sha}.ots").is_file():
        return Found(
            1, 0, [], ("run `timestamps upgrade` a day after each stamp for the Bitcoin attestations",)
        )
    return Found(1, 1, [(f"a proof of the current DEVIATIONS.md ({sha[:12]}...)", "stamp DEVIATIONS.md")])


CHECKERS: dict[str, Callable[[Path], Found]] = {
    "prepare": _prepare,
    "stamp": _stamp,
    "data": _data,
    "models": _models,
    "first-stages": _first_stages,
    "check-adapters": _check_adapters,
    "quality": _quality,
    "determinism": _determinism,
    "dtype-check": _dtype_check,
    "pitfalls": _pitfalls,
    "int8": _int8,
    "latency-gpu": _latency_gpu,
    "latency-desktop": _latency_desktop,
    "latency-cpu": _latency_cpu,
    "latency-api": _latency_api,
    "costs-inputs": _costs_inputs,
    "prices": _prices,
    "judged": _judged,
    "report": _report,
    "audit": _audit,
    "stamp-later": _stamp_later,
}


def _command_for(step: Step, word: str) -> str:
    for c in step.commands:
        if word in c and not c.startswith("git "):
            return c
    return next(c for c in step.commands if not c.startswith("git "))


def phase_states(root: Path) -> list[PhaseState]:
    steps = read_runbook(root)
    ids = [s.id for s in steps]
    if set(ids) != set(CHECKERS):
        raise BenchError(
            f"docs/runbook.md's steps ({', '.join(ids)}) differ from bench status's phases "
            f"({', '.join(CHECKERS)}); the two are kept equal by tests/runbook"
        )
    out = []
    for step in steps:
        found = CHECKERS[step.id](root)
        state = _state(found)
        if step.id == "audit":
            state = TO_CHECK
        nxt = None
        if found.missing:
            nxt = found.next_command or _command_for(step, found.missing[0][1])
        out.append(
            PhaseState(step.id, step.machine, state, [m for m, _ in found.missing], list(found.notes), nxt)
        )
    return out


def this_machine() -> str:
    """gpu-desktop when an NVIDIA GPU is visible (driver's proc folder or device node), else ``any``."""
    gpus = Path("/proc/driver/nvidia/gpus")
    if (gpus.is_dir() and any(gpus.iterdir())) or Path("/dev/nvidia0").exists():
        return "gpu-desktop"
    return "any"


def status_report(root: Path, machine: str) -> dict[str, Any]:
    phases = phase_states(root)
    pending = [p for p in phases if p.state in (PARTIAL, NOT_STARTED)]
    here = [p for p in pending if p.machine in RUNNABLE_ON[machine]]
    return {
        "machine": machine,
        "phases": [p.as_json() for p in phases],
        "next": None
        if not pending
        else {"step": pending[0].id, "machine": pending[0].machine, "command": pending[0].next},
        "next_here": None if not here else {"step": here[0].id, "command": here[0].next},
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [f"{'step':<16} {'machine':<12} {'state':<12} what is missing"]
    for p in report["phases"]:
        first = p["missing"][0] if p["missing"] else ""
        lines.append(f"{p['id']:<16} {p['machine']:<12} {p['state']:<12} {first}".rstrip())
        rest = p["missing"][1:]
        if p["state"] == NOT_STARTED and len(rest) > 2:  # the whole list is in --json
            lines.append(f"{'':<42}(and {len(rest)} more; --json lists them)")
        else:
            lines += [f"{'':<42}{m}" for m in rest]
        lines += [f"{'':<42}note: {n}" for n in p["notes"]]
    nxt, here = report["next"], report["next_here"]
    if nxt is None:
        lines.append(f"every step is done; run the audit: {hint('audit')}")
    else:
        lines.append(f"next in the runbook: step {nxt['step']} on {nxt['machine']}: {nxt['command']}")
        if here is not None:
            lines.append(f"next on this machine ({report['machine']}): {here['command']}")
        else:
            lines.append(f"nothing left for this machine ({report['machine']})")
    return "\n".join(lines)


@click.command("status")
@click.option(
    "--machine",
    type=click.Choice(MACHINES),
    default=None,
    help="This machine's role in the runbook (default: gpu-desktop when an NVIDIA GPU is visible, else any).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def status(machine: str | None, as_json: bool) -> None:
    """Where the study stands: every runbook step done / partial / not started, and the next command."""
    report = status_report(paths.repo_root(), machine or this_machine())
    click.echo(json.dumps(report, indent=2, sort_keys=True) if as_json else format_report(report))
