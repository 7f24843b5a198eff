"""Deciding and further references of adapter check 1, and how they are run (plan: Adapter checks 1).

A reference never shares the adapter's code path: it is a standalone script under ``references/`` run as a
subprocess in its own environment (input JSON with queries and candidate texts in, scores out), so the
main process never imports a second transformers. Environments:

- ``main``: the measuring environment (transformers 5.5.4): bge-v2-m3 and Qwen3 model-card code.
- ``tf457``: ``references/tf457`` (locked, transformers 4.57.x): gte, jina and Querit (remote code).
- ``mxbai``: ``references/mxbai`` (locked, mxbai-rerank 0.1.6): the vendor package.

Further references (reported, never deciding) run the same card code in the other transformers major, which
shows where a difference comes from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bench.core.paths import repo_root
from bench.core.plan import QWEN3_INSTRUCTION, RERANKERS
from bench.equality.data import EqualityQuery

Env = Literal["main", "tf457", "mxbai"]


@dataclass(frozen=True)
class ReferenceSpec:
    name: str  # script key in references/run.py
    env: Env
    description: str
    options: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None  # None: the checkpoint's own dtype ("auto")

    @property
    def label(self) -> str:
        return f"{self.name}@{self.env}"


class ReferenceUnavailable(Exception):
    """The reference could not run (environment missing, script failed); the model is then not rated."""


_QWEN3 = {"instruction": QWEN3_INSTRUCTION, "max_length": 8192}
_GTE = {
    "trust_remote_code": True,
    "max_length": 512,
    "code_revision": RERANKERS["gte-base"].code_revision,
}

DECIDING: dict[str, ReferenceSpec] = {
    "bge-v2-m3": ReferenceSpec(
        "card-seqcls", "main", "model-card code in plain transformers", {"max_length": 512}
    ),
    "qwen3-0.6b": ReferenceSpec("card-qwen3", "main", "model-card code in plain transformers", _QWEN3),
    "qwen3-4b": ReferenceSpec("card-qwen3", "main", "model-card code in plain transformers", _QWEN3),
    "mxbai-large-v2": ReferenceSpec("vendor-mxbai", "mxbai", "vendor package mxbai-rerank==0.1.6"),
    "gte-base": ReferenceSpec("card-seqcls", "tf457", "model-card code under transformers 4.57", _GTE),
    "jina-v3.5": ReferenceSpec("card-jina", "tf457", "model-card code under transformers 4.57"),
    "querit-4b": ReferenceSpec(
        "mteb-querit",
        "tf457",
        "mteb 2.24.3 QueritWrapper input format under transformers 4.57",
        {},
        "bfloat16",
    ),
}

FURTHER: dict[str, tuple[ReferenceSpec, ...]] = {
    "bge-v2-m3": (
        ReferenceSpec("card-seqcls", "tf457", "model-card code under transformers 4.57", {"max_length": 512}),
    ),
    "qwen3-0.6b": (ReferenceSpec("card-qwen3", "tf457", "model-card code under transformers 4.57", _QWEN3),),
    "qwen3-4b": (ReferenceSpec("card-qwen3", "tf457", "model-card code under transformers 4.57", _QWEN3),),
    "gte-base": (ReferenceSpec("card-seqcls", "main", "model-card code under transformers 5.5.4", _GTE),),
    "jina-v3.5": (ReferenceSpec("card-jina", "main", "model-card code under transformers 5.5.4"),),
}


def references_dir() -> Path:
    return repo_root() / "references"


def env_python(env: Env) -> Path:
    """The interpreter of a reference environment (``BENCH_REFERENCE_PYTHON_<ENV>`` overrides)."""
    override = os.environ.get(f"BENCH_REFERENCE_PYTHON_{env.upper()}")
    if override:
        return Path(override)
    if env == "main":
        return Path(sys.executable)
    return references_dir() / env / ".venv" / "bin" / "python"


def not_installed(env: Env, py: Path) -> str:
    """Why a reference environment cannot run, with the command that installs it where ``env_python`` looks.
    The environment is named explicitly: an inherited UV_PROJECT_ENVIRONMENT (the image's /opt/venv) would
    make `uv sync --project` overwrite the main environment."""
    return (
        f"reference environment {env!r} is not installed ({py} missing); run "
        f"`UV_PROJECT_ENVIRONMENT={py.parent.parent} uv sync --project references/{env} --frozen` "
        "on the study machine"
    )


def _payload(spec: ReferenceSpec, model_dir: Path, queries: Sequence[EqualityQuery], device: str) -> dict:
    return {
        "reference": spec.name,
        "model_dir": str(model_dir),
        "device": device,
        "dtype": spec.dtype,
        "options": dict(spec.options),
        "queries": [{"qid": q.qid, "query": q.query, "passages": list(q.passages)} for q in queries],
    }


def _reference_env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONNOUSERSITE": "1"}
    env.pop("PYTHONPATH", None)  # the reference must not see the main environment's packages
    return env


def _checked(spec: ReferenceSpec, result: dict[str, Any], queries: Sequence[EqualityQuery]) -> dict[str, Any]:
    missing = [q.qid for q in queries if len(result.get("scores", {}).get(q.qid, [])) != len(q.passages)]
    if missing:
        raise ReferenceUnavailable(
            f"reference {spec.label} returned no or wrong-length scores for {missing[:3]}"
        )
    return result


def run_reference_batch(
    jobs: Sequence[tuple[ReferenceSpec, Path]],
    queries: Sequence[EqualityQuery],
    *,
    device: str = "cpu",
    timeout_s: float = 3600.0,
) -> list[dict[str, Any] | ReferenceUnavailable]:
    """Every (reference, model snapshot) job over ``queries``, one subprocess per environment instead of one
    per job (each start imports torch and transformers): in the jobs' order, the result of each or the
    ReferenceUnavailable that keeps it from counting. One job's failure is its own; a process that dies
    mid-way (out of memory) costs the job it was running, and the jobs after it run in a fresh process."""
    out: list[dict[str, Any] | ReferenceUnavailable | None] = [None] * len(jobs)
    groups: dict[Path, list[int]] = {}
    for i, (spec, _) in enumerate(jobs):
        groups.setdefault(env_python(spec.env), []).append(i)
    for py, todo in groups.items():
        if not py.exists():
            for i in todo:
                spec = jobs[i][0]
                out[i] = ReferenceUnavailable(not_installed(spec.env, py))
            continue
        while todo:
            done, failure = _run_batch(py, [jobs[i] for i in todo], queries, device, timeout_s * len(todo))
            for i, result in zip(todo, done, strict=False):
                spec = jobs[i][0]
                if "error" in result:
                    out[i] = ReferenceUnavailable(f"reference {spec.label} failed: {result['error']}")
                else:
                    try:
                        out[i] = _checked(spec, result, queries)
                    except ReferenceUnavailable as exc:
                        out[i] = exc
            if len(done) < len(todo):  # the process died in job len(done): that one fails, the rest re-run
                out[todo[len(done)]] = ReferenceUnavailable(
                    f"reference {jobs[todo[len(done)]][0].label} {failure}"
                )
            todo = todo[len(done) + 1 :]
    return [r for r in out if r is not None]


def _run_batch(
    py: Path,
    jobs: Sequence[tuple[ReferenceSpec, Path]],
    queries: Sequence[EqualityQuery],
    device: str,
    timeout_s: float,
) -> tuple[list[dict[str, Any]], str]:
    """(the results run.py wrote, why it stopped early if it did)."""
    payload = {"jobs": [_payload(spec, mdir, queries, device) for spec, mdir in jobs]}
    with tempfile.TemporaryDirectory(prefix="bench-ref-") as tmp:
        inp, out = Path(tmp) / "in.json", Path(tmp) / "out.json"
        inp.write_text(json.dumps(payload), encoding="utf-8")
        why = ""
        try:
            proc = subprocess.run(
                [str(py), str(references_dir() / "run.py"), str(inp), str(out)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=_reference_env(),
                check=False,
            )
            if proc.returncode != 0:
                why = f"exited {proc.returncode}: " + " | ".join(proc.stderr.strip().splitlines()[-15:])
        except subprocess.TimeoutExpired:
            why = f"ran past the batch's {timeout_s:.0f} s"
        try:
            results: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))["results"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError):
            results = []
    return results[: len(jobs)], why or "stopped without writing its result"


def run_reference(
    spec: ReferenceSpec,
    model_dir: Path,
    queries: Sequence[EqualityQuery],
    *,
    device: str = "cpu",
    python: Path | None = None,
    timeout_s: float = 3600.0,
) -> dict[str, Any]:
    """Scores of ``spec`` for every query ({"scores": {qid: [...]}, "versions", "seconds"}).

    Raises ReferenceUnavailable with the reason (missing environment, non-zero exit with its stderr tail,
    malformed output) so the caller can record the model as not rated.
    """
    py = python or env_python(spec.env)
    if not py.exists():
        raise ReferenceUnavailable(not_installed(spec.env, py))
    payload = _payload(spec, model_dir, queries, device)
    with tempfile.TemporaryDirectory(prefix="bench-ref-") as tmp:
        inp, out = Path(tmp) / "in.json", Path(tmp) / "out.json"
        inp.write_text(json.dumps(payload), encoding="utf-8")
        env = _reference_env()
        try:
            proc = subprocess.run(
                [str(py), str(references_dir() / "run.py"), str(inp), str(out)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ReferenceUnavailable(f"reference {spec.label} ran longer than {timeout_s:.0f} s") from None
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-15:]
            raise ReferenceUnavailable(
                f"reference {spec.label} exited {proc.returncode}: " + " | ".join(tail)
            )
        try:
            result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ReferenceUnavailable(f"reference {spec.label} wrote no readable output ({exc})") from None
    return _checked(spec, result, queries)
