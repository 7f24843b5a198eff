"""The machine checks of ``bench doctor`` that need no GPU: interpreter, packages, CPU, Typesense, API keys
and the reference environments (disk and memory: ``space.py``). Each takes the machine seam and the step id
and returns outcomes (``bench.doctor.outcome``); none prints a key."""

from __future__ import annotations

import json
from pathlib import Path

from bench.core import plan
from bench.core.errors import BenchError
from bench.core.hints import bench_command
from bench.core.runbook import RUNBOOK, parse_runbook
from bench.doctor.machine import Machine
from bench.doctor.outcome import Outcome, cannot_tell, info, ok, problem
from bench.doctor.packages import IMAGE_GROUPS, LOCK, compare
from bench.equality.references import env_python
from bench.firststage import features
from bench.firststage.server import KEY_ENV as TYPESENSE_KEY_ENV
from bench.firststage.server import URL_ENV as TYPESENSE_URL_ENV
from bench.rerankers.voyage import read_api_key

LIST_AT_MOST = 6  # names listed per kind of difference; the count says how many in all
REBUILD = "rebuild the image from the committed uv.lock (`docker compose build`), or `uv sync --locked`"
MEASURING = frozenset(
    {
        "first-stages",
        "check-adapters",
        "quality",
        "determinism",
        "dtype-check",
        "pitfalls",
        "int8",
        "latency-gpu",
        "latency-desktop",
        "latency-cpu",
        "latency-api",
        "prepare",
    }
)


def python(m: Machine, step: str) -> list[Outcome]:
    found = f"Python {m.python_version} ({m.prefix})"
    if m.python_version == plan.PYTHON_VERSION:
        return [ok("python", f"{found}, the image's")]
    if step not in MEASURING:
        return [info("python", f"{found}; measuring steps run on the image's {plan.PYTHON_VERSION}")]
    return [
        problem(
            "python",
            f"{found}, but the study measures on the image's Python {plan.PYTHON_VERSION} (PLAN.md)",
            f"run the step in the container (`{_container_command(m, step)}`)",
        )
    ]


def _container_command(m: Machine, step: str) -> str:
    """The first container command of runbook step ``step`` (a step id is not a bench command: `bench
    latency-cpu` has no compose service), else the step's own doctor command."""
    try:
        steps = parse_runbook((m.root / RUNBOOK).read_text(encoding="utf-8"), m.root / RUNBOOK)
    except (OSError, UnicodeDecodeError, BenchError):
        steps = []
    for found in steps:
        if found.id == step:
            command = next((c for c in found.commands if c.split()[:3] == ["docker", "compose", "run"]), None)
            if command is not None:
                return command
    return bench_command("doctor", step)


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:LIST_AT_MOST])
    return shown if len(items) <= LIST_AT_MOST else f"{shown} and {len(items) - LIST_AT_MOST} more"


def packages(m: Machine, step: str) -> list[Outcome]:
    try:
        diff = compare(m.root / LOCK, m.distributions(), groups=IMAGE_GROUPS, markers=m.markers)
    except BenchError as exc:
        return [cannot_tell("packages", str(exc))]
    out = []
    if diff.changed:
        out.append(
            problem(
                "packages",
                f"{len(diff.changed)} installed at another version than uv.lock's: "
                + _names([f"{n} {have} (lock: {want})" for n, want, have in diff.changed]),
                REBUILD,
            )
        )
    if diff.missing:
        out.append(
            problem(
                "packages",
                f"{len(diff.missing)} of uv.lock missing: " + _names([f"{n} {v}" for n, v in diff.missing]),
                REBUILD,
            )
        )
    if diff.extra:
        out.append(
            problem(
                "packages",
                f"{len(diff.extra)} installed that uv.lock does not have: "
                + _names([f"{n} {v}" for n, v in diff.extra]),
                "remove them (`uv sync --locked` removes what the lock does not name), or rebuild the image",
            )
        )
    if not out:
        out.append(
            ok(
                "packages",
                f"the {len(diff.expected)} packages of uv.lock ({', '.join(IMAGE_GROUPS)} "
                "and the project's own), each at the locked version, nothing else",
            )
        )
    return out


def cpu(m: Machine, step: str) -> list[Outcome]:
    return [info("cpu", m.cpu())]


def typesense(m: Machine, step: str) -> list[Outcome]:
    url, key = m.env.get(TYPESENSE_URL_ENV), m.env.get(TYPESENSE_KEY_ENV)
    if not url or not key:
        return [
            problem(
                "typesense",
                f"{TYPESENSE_URL_ENV} / {TYPESENSE_KEY_ENV} not set",
                "run in the container (compose.yaml sets both) after `docker compose up -d typesense`",
            )
        ]
    try:
        version = str(m.typesense(url, key).get("version", "unknown"))
    except BenchError as exc:
        return [problem("typesense", f"Typesense not reachable: {exc}", "`docker compose up -d typesense`")]
    out = []
    try:
        same = features.parse_version(version) == features.parse_version(plan.TYPESENSE_VERSION)
    except BenchError:
        same = False
    if same:
        out.append(ok("typesense", f"Typesense {version} at {url}, the plan's version"))
    else:
        out.append(
            problem(
                "typesense",
                f"Typesense {version} answers at {url}, the plan fixes {plan.TYPESENSE_VERSION}",
                "stop that server and start the plan's image (`docker compose up -d typesense`)",
            )
        )
    image = m.env.get("BENCH_TYPESENSE_IMAGE")
    if not image:
        out.append(
            cannot_tell(
                "typesense-image",
                "BENCH_TYPESENSE_IMAGE not set (outside compose): the image cannot be told from the server",
                "run in the container",
            )
        )
    elif image != plan.TYPESENSE_IMAGE:
        out.append(
            problem(
                "typesense-image",
                f"compose starts {image}, PLAN.md pins {plan.TYPESENSE_IMAGE}",
                "restore compose.yaml's x-typesense-image (`git checkout compose.yaml`)",
            )
        )
    else:
        out.append(ok("typesense-image", "compose's image is the plan's"))
    return out


KEYS = {  # step -> the keys its commands read
    "check-adapters": ("VOYAGE_API_KEY",),
    "quality": ("VOYAGE_API_KEY",),
    "latency-api": ("VOYAGE_API_KEY",),
    "judged": ("ANTHROPIC_API_KEY",),
}


def keys(m: Machine, step: str) -> list[Outcome]:
    out = []
    for name in KEYS.get(step, ()):
        why = f"{name} is not set"
        if name == "VOYAGE_API_KEY":  # the environment or .env, as bench.rerankers.voyage reads it
            try:
                read_api_key(env=dict(m.env), dotenv=m.root / ".env")
                present = True
            except BenchError as exc:  # a key of spaces, a .env that is not UTF-8: its own cause
                present, why = False, (why if str(exc).startswith("No Voyage") else str(exc))
        else:  # ANTHROPIC_API_KEY: the environment only (bench.judged.run)
            present = bool(m.env.get(name, "").strip())
        if present:
            out.append(ok("keys", f"{name} is set (not shown)"))
        else:
            out.append(
                problem(
                    "keys",
                    why,
                    f"export {name}=... in the shell that runs docker compose (never commit it)",
                )
            )
    return out


PROBE = """
import importlib, importlib.metadata, importlib.util, json, os, sys
DISTS = {"mxbai_rerank": "mxbai-rerank"}
out = {"prefix": sys.prefix, "errors": {}, "versions": {}}
for name in MODULES if os.path.realpath(sys.prefix) != MAIN else ():  # the main one: nothing to import
    try:
        if IMPORT:
            out["versions"][name] = getattr(importlib.import_module(name), "__version__", "?")
        elif importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}")
        else:
            out["versions"][name] = importlib.metadata.version(DISTS.get(name, name))
    except Exception as exc:
        out["errors"][name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""
# The step that runs the references imports their packages (torch and transformers: seconds of CPU each);
# the others only find them (importlib.util.find_spec) and read their installed versions.
IMPORTED_IN = frozenset({"check-adapters"})
REFERENCE_MODULES = {"tf457": ("transformers", "torch"), "mxbai": ("mxbai_rerank", "transformers", "torch")}


def references(m: Machine, step: str) -> list[Outcome]:
    out = []
    for env, mods in REFERENCE_MODULES.items():
        var = f"BENCH_REFERENCE_PYTHON_{env.upper()}"
        py = Path(m.env[var]) if m.env.get(var) else env_python(env)  # type: ignore[arg-type]
        check, fix = (
            f"reference-{env}",
            f"set {var} to the interpreter of references/{env} (the image sets it)",
        )
        if not py.is_file():
            said = f"{var} is {py}, which" if m.env.get(var) else f"{var} is not set and the default {py}"
            out.append(problem(check, f"{said} does not exist", fix))
            continue
        env_vars = {k: v for k, v in m.env.items() if k != "PYTHONPATH"}
        main = str(m.prefix.resolve())
        proc = m.run_python(
            py,
            f"MODULES = {list(mods)!r}\nMAIN = {main!r}\nIMPORT = {step in IMPORTED_IN}\n" + PROBE,
            {**env_vars, "PYTHONNOUSERSITE": "1"},
        )
        try:
            found = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            out.append(problem(check, f"{py} did not run ({proc.stderr.strip()[-200:]})", fix))
            continue
        if Path(found["prefix"]).resolve() == m.prefix.resolve():
            out.append(
                problem(check, f"{var} is {py}, the main environment ({m.prefix}), not references/{env}", fix)
            )
        elif found["errors"]:
            name, err = next(iter(found["errors"].items()))
            out.append(
                problem(
                    check,
                    f"{py} cannot import {name} ({err})",
                    f"`uv sync --locked --project references/{env}` into that environment",
                )
            )
        elif env == "tf457" and not str(found["versions"].get("transformers")).startswith("4.57."):
            out.append(
                problem(
                    check,
                    f"{py} has transformers {found['versions'].get('transformers')}, "
                    "references/tf457 locks 4.57",
                    f"`uv sync --locked --project references/{env}`",
                )
            )
        else:
            versions = ", ".join(f"{k} {v}" for k, v in found["versions"].items())
            out.append(ok(check, f"{py} ({found['prefix']}): {versions}"))
    return out
